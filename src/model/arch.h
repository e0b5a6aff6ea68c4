// What differs between architectures. The transformer layer (transformer.cpp) is shared; an
// architecture declares which optional per-layer tensors it requires (biases, Q/K norms) and
// anything else it binds. One file per architecture in arch/.
#pragma once

#include <string_view>

#include "base/status.h"
#include "model/config.h"
#include "model/weights.h"

namespace ridge::model {

struct Architecture {
  std::string_view name;  // general.architecture
  // Binds the architecture's own tensors after bind_common (biases, Q/K norms, rope factors).
  Status (*bind_extra)(WeightBinder& b, const ModelConfig& cfg, Weights& w);
};

const Architecture& llama_architecture();  // arch/llama.cpp
const Architecture& qwen2_architecture();  // arch/qwen2.cpp
const Architecture& qwen3_architecture();  // arch/qwen3.cpp
const Architecture& qwen2moe_architecture();  // arch/qwen2.cpp (attention as qwen2, MoE FFN)
const Architecture& qwen3moe_architecture();  // arch/qwen3.cpp (attention as qwen3, MoE FFN)
const Architecture& gpt_oss_architecture();  // arch/gpt_oss.cpp (gpt-oss)
const Architecture& gemma2_architecture();   // arch/gemma.cpp (Gemma 2)
const Architecture& gemma3_architecture();   // arch/gemma.cpp (Gemma 3)
const Architecture& gemma4_architecture();   // arch/gemma.cpp (Gemma 4)
const Architecture& qwen35_architecture();    // arch/qwen35.cpp (Qwen3.5: Gated DeltaNet + gated attention)
const Architecture& qwen35moe_architecture(); // arch/qwen35.cpp (the same with Qwen3.5-MoE's FFN)

// The per-head Q and K RMSNorm weights of layer il ([head_dim] each): qwen3, qwen3moe, gemma3.
Status bind_qk_norms(WeightBinder& b, const ModelConfig& cfg, int64_t il, LayerWeights& l);

// The architecture of `name`, or an error listing the supported ones.
Result<const Architecture*> find_architecture(std::string_view name);

}  // namespace ridge::model
