// The experts of a mixture-of-experts checkpoint (Qwen3-MoE, Qwen2-MoE): Hugging Face keeps one
// matrix per expert ("model.layers.L.mlp.experts.E.gate_proj.weight"); llama.cpp's GGUF keeps a
// layer's experts of one kind stacked in one tensor ("blk.L.ffn_gate_exps.weight",
// [n_expert, rows, cols] outermost first), expert 0 first.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "checkpoint/safetensors.h"
#include "gguf/writer.h"

namespace ridge::checkpoint {

struct HfConfig;

// One expert's matrix: its layer, expert index and kind ("gate", "up", "down").
struct ExpertMatrix {
  int64_t layer = 0, expert = 0;
  std::string kind;
};
// Whether a Hugging Face tensor name is an expert's matrix, and which.
std::optional<ExpertMatrix> expert_matrix(const std::string& hf_name);

// Collects the experts' tensors, then adds each layer's stacks to a writer.
class ExpertStacks {
 public:
  // Keeps `t` (which expert_matrix named `m`); an error for an expert or layer out of the
  // configuration's range or a second copy.
  Status add(const HfConfig& c, const ExpertMatrix& m, const Tensor* t);
  // Adds blk.L.ffn_{gate,up,down}_exps.weight for every layer of c: an error naming what is
  // missing, or experts of one stack with different shapes or types.
  Status write(const HfConfig& c, gguf::Writer& w) const;

 private:
  std::map<std::pair<int64_t, std::string>, std::vector<const Tensor*>> stacks_;  // (layer, kind)
};

}  // namespace ridge::checkpoint
