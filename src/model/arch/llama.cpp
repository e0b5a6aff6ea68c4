// Llama 1/2/3 and llama2.c conversions: no biases, "normal" rope (adjacent pairs; llama.cpp's
// converter permutes the Q/K rows of Hugging Face checkpoints so this layout applies), an
// optional rope_freqs tensor carrying Llama 3's frequency factors.
#include "model/arch.h"

namespace ridge::model {
namespace {

Status bind_llama(WeightBinder& b, const ModelConfig& cfg, Weights& w) {
  RIDGE_ASSIGN_OR_RETURN(w.rope_freqs, b.optional_vector("rope_freqs.weight", cfg.rope_dims / 2));
  // Some Llama-family checkpoints carry attention biases; bind them when present.
  for (int64_t il = 0; il < cfg.n_layer; ++il) {
    LayerWeights& l = w.layers[static_cast<size_t>(il)];
    RIDGE_ASSIGN_OR_RETURN(l.bq, b.optional_vector(layer_tensor(il, "attn_q.bias"), cfg.q_dim()));
    RIDGE_ASSIGN_OR_RETURN(l.bk, b.optional_vector(layer_tensor(il, "attn_k.bias"), cfg.kv_dim()));
    RIDGE_ASSIGN_OR_RETURN(l.bv, b.optional_vector(layer_tensor(il, "attn_v.bias"), cfg.kv_dim()));
  }
  return ok_status();
}

}  // namespace

const Architecture& llama_architecture() {
  static const Architecture kArch{"llama", bind_llama};
  return kArch;
}

}  // namespace ridge::model
