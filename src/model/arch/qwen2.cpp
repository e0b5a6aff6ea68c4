// Qwen2 / Qwen2.5: biases on the Q, K and V projections (none on the output), NeoX rope
// (rotates halves of each head).
#include "model/arch.h"

namespace ridge::model {
namespace {

Status bind_qwen2(WeightBinder& b, const ModelConfig& cfg, Weights& w) {
  for (int64_t il = 0; il < cfg.n_layer; ++il) {
    LayerWeights& l = w.layers[static_cast<size_t>(il)];
    RIDGE_ASSIGN_OR_RETURN(l.bq, b.vector(layer_tensor(il, "attn_q.bias"), cfg.q_dim()));
    RIDGE_ASSIGN_OR_RETURN(l.bk, b.vector(layer_tensor(il, "attn_k.bias"), cfg.kv_dim()));
    RIDGE_ASSIGN_OR_RETURN(l.bv, b.vector(layer_tensor(il, "attn_v.bias"), cfg.kv_dim()));
  }
  return ok_status();
}

}  // namespace

const Architecture& qwen2_architecture() {
  static const Architecture kArch{"qwen2", bind_qwen2};
  return kArch;
}

// Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): Qwen2's attention; its FFN is bind_experts'.
const Architecture& qwen2moe_architecture() {
  static const Architecture kArch{"qwen2moe", bind_qwen2};
  return kArch;
}

}  // namespace ridge::model
