// gpt-oss (GGUF `gpt-oss`, llama.cpp's LLM_ARCH_OPENAI_MOE): biased Q/K/V and output projections, attention sinks, sliding-
// window layers alternating with full ones, YaRN rope (NeoX), and a biased MoE FFN whose router
// softmaxes the picked logits and whose experts use the clamped SwiGLU; the FFN's norm is named
// post_attention_norm (bind_common and bind_experts bind those).
#include "model/arch.h"

namespace ridge::model {
namespace {

Status bind_gpt_oss(WeightBinder& b, const ModelConfig& cfg, Weights& w) {
  for (int64_t il = 0; il < cfg.n_layer; ++il) {
    LayerWeights& l = w.layers[static_cast<size_t>(il)];
    RIDGE_ASSIGN_OR_RETURN(l.bq, b.optional_vector(layer_tensor(il, "attn_q.bias"), cfg.q_dim()));
    RIDGE_ASSIGN_OR_RETURN(l.bk, b.optional_vector(layer_tensor(il, "attn_k.bias"), cfg.kv_dim()));
    RIDGE_ASSIGN_OR_RETURN(l.bv, b.optional_vector(layer_tensor(il, "attn_v.bias"), cfg.kv_dim()));
    RIDGE_ASSIGN_OR_RETURN(l.bo, b.vector(layer_tensor(il, "attn_output.bias"), cfg.n_embd));
    RIDGE_ASSIGN_OR_RETURN(l.attn_sinks, b.vector(layer_tensor(il, "attn_sinks.weight"), cfg.n_head));
  }
  return ok_status();
}

}  // namespace

const Architecture& gpt_oss_architecture() {
  static const Architecture kArch{"gpt-oss", bind_gpt_oss};
  return kArch;
}

}  // namespace ridge::model
