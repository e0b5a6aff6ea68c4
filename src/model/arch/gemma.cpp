// Gemma 2 and Gemma 3 (GGUF `gemma2`, `gemma3`): an RMSNorm on the attention output
// (post_attention_norm) and on the FFN output (post_ffw_norm) before each residual add, a GeGLU
// FFN, embeddings scaled by sqrt(n_embd), sliding-window layers (the config carries those, and
// gemma2's soft-capping); gemma3 adds Qwen3's per-head Q/K RMSNorm. The norms' weights are stored
// with Gemma's +1 already added by the converter, so they are used as they are.
#include "model/arch.h"

namespace ridge::model {
namespace {

Status bind_post_norms(WeightBinder& b, const ModelConfig& cfg, int64_t il, LayerWeights& l) {
  RIDGE_ASSIGN_OR_RETURN(l.attn_post_norm, b.vector(layer_tensor(il, "post_attention_norm.weight"), cfg.n_embd));
  RIDGE_ASSIGN_OR_RETURN(l.ffn_post_norm, b.vector(layer_tensor(il, "post_ffw_norm.weight"), cfg.n_embd));
  return ok_status();
}

Status bind_gemma2(WeightBinder& b, const ModelConfig& cfg, Weights& w) {
  for (int64_t il = 0; il < cfg.n_layer; ++il) {
    RIDGE_RETURN_IF_ERROR(bind_post_norms(b, cfg, il, w.layers[static_cast<size_t>(il)]));
  }
  return ok_status();
}

Status bind_gemma3(WeightBinder& b, const ModelConfig& cfg, Weights& w) {
  for (int64_t il = 0; il < cfg.n_layer; ++il) {
    LayerWeights& l = w.layers[static_cast<size_t>(il)];
    RIDGE_RETURN_IF_ERROR(bind_qk_norms(b, cfg, il, l));
    RIDGE_RETURN_IF_ERROR(bind_post_norms(b, cfg, il, l));
  }
  return ok_status();
}

}  // namespace

const Architecture& gemma2_architecture() {
  static const Architecture kArch{"gemma2", bind_gemma2};
  return kArch;
}

const Architecture& gemma3_architecture() {
  static const Architecture kArch{"gemma3", bind_gemma3};
  return kArch;
}

}  // namespace ridge::model
