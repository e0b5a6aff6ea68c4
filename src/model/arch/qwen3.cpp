// Qwen3 (dense): no biases; an RMSNorm over each head of Q and of K (weights [head_dim]) before
// rope; NeoX rope.
#include "model/arch.h"

namespace ridge::model {

Status bind_qk_norms(WeightBinder& b, const ModelConfig& cfg, int64_t il, LayerWeights& l) {
  RIDGE_ASSIGN_OR_RETURN(l.q_norm, b.vector(layer_tensor(il, "attn_q_norm.weight"), cfg.layer_head_dim(il)));
  RIDGE_ASSIGN_OR_RETURN(l.k_norm, b.vector(layer_tensor(il, "attn_k_norm.weight"), cfg.layer_head_dim(il)));
  return ok_status();
}

namespace {

Status bind_qwen3(WeightBinder& b, const ModelConfig& cfg, Weights& w) {
  for (int64_t il = 0; il < cfg.n_layer; ++il) {
    RIDGE_RETURN_IF_ERROR(bind_qk_norms(b, cfg, il, w.layers[static_cast<size_t>(il)]));
  }
  return ok_status();
}

}  // namespace

const Architecture& qwen3_architecture() {
  static const Architecture kArch{"qwen3", bind_qwen3};
  return kArch;
}

// Qwen3-MoE (Qwen3-30B-A3B, Qwen3-235B-A22B, Qwen3-Coder): Qwen3's attention; its FFN is bind_experts'.
const Architecture& qwen3moe_architecture() {
  static const Architecture kArch{"qwen3moe", bind_qwen3};
  return kArch;
}

}  // namespace ridge::model
