#include "checkpoint/hf_experts.h"

#include <cstring>
#include <regex>

#include "checkpoint/hf_convert.h"

namespace ridge::checkpoint {

std::optional<ExpertMatrix> expert_matrix(const std::string& hf_name) {
  static const std::regex expert(R"(model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight)");
  std::smatch m;
  if (!std::regex_match(hf_name, m, expert) || m[1].length() > 9 || m[2].length() > 9) return std::nullopt;
  return ExpertMatrix{std::stoll(m[1].str()), std::stoll(m[2].str()), m[3].str()};
}

Status ExpertStacks::add(const HfConfig& c, const ExpertMatrix& m, const Tensor* t) {
  if (c.n_expert == 0) return error("tensor '{}': an expert, but config.json names no experts", t->name);
  if (m.layer >= c.n_layer || m.expert >= c.n_expert) {
    return error("tensor '{}': past the {} layers of {} experts config.json names", t->name, c.n_layer, c.n_expert);
  }
  std::vector<const Tensor*>& stack = stacks_[{m.layer, m.kind}];
  stack.resize(static_cast<size_t>(c.n_expert), nullptr);
  const Tensor*& slot = stack[static_cast<size_t>(m.expert)];
  if (slot != nullptr) return error("tensor '{}' appears twice", t->name);
  slot = t;
  return ok_status();
}

Status ExpertStacks::write(const HfConfig& c, gguf::Writer& w) const {
  for (int64_t il = 0; il < c.n_layer; ++il) {
    for (const char* kind : {"gate", "up", "down"}) {
      const std::string hf_prefix = "model.layers." + std::to_string(il) + ".mlp.experts.";
      auto it = stacks_.find({il, kind});
      if (it == stacks_.end()) return error("the checkpoint has no {}0.{}_proj.weight", hf_prefix, kind);
      const std::vector<const Tensor*>& experts = it->second;
      for (size_t e = 0; e < experts.size(); ++e) {
        if (experts[e] == nullptr) return error("the checkpoint has no {}{}.{}_proj.weight", hf_prefix, e, kind);
      }
      const Tensor& first = *experts[0];
      RIDGE_ASSIGN_OR_RETURN(const GgmlType type, gguf_type_of(first));
      const int64_t rows = std::string(kind) == "down" ? c.n_embd : c.n_ff_exp;
      const int64_t cols = std::string(kind) == "down" ? c.n_ff_exp : c.n_embd;
      for (const Tensor* t : experts) {
        if (t->dtype != first.dtype || t->shape != std::vector<int64_t>{rows, cols}) {
          return error("tensor '{}': shape or dtype differs from the other experts' [{}, {}] {}", t->name, rows,
                       cols, dtype_name(first.dtype));
        }
      }
      const std::string name = "blk." + std::to_string(il) + ".ffn_" + kind + "_exps.weight";
      const std::vector<uint64_t> shape = {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows),
                                           static_cast<uint64_t>(c.n_expert)};
      RIDGE_RETURN_IF_ERROR(w.add_tensor(name, type, shape, [experts](std::span<uint8_t> dst) {
        size_t at = 0;
        for (const Tensor* t : experts) {
          std::memcpy(dst.data() + at, t->data.data(), t->data.size());
          at += t->data.size();
        }
        return Status();
      }));
    }
  }
  return ok_status();
}

}  // namespace ridge::checkpoint
