// Gemma 2, 3 and 4 (GGUF `gemma2`, `gemma3`, `gemma4`): an RMSNorm on the attention output
// (post_attention_norm) and on the FFN output (post_ffw_norm) before each residual add, a GeGLU
// FFN, embeddings scaled by sqrt(n_embd), sliding-window layers (the config carries those, and
// gemma2's soft-capping); gemma3 adds Qwen3's per-head Q/K RMSNorm. The norms' weights are stored
// with Gemma's +1 already added by the converter (gemma4's need none), so they are used as they
// are. gemma4 adds per-layer shapes, KV sharing, per-layer embeddings and output scales
// (config.h), and rope_freqs for its global layers.
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

// A Gemma 4 MoE layer's own tensors (the experts themselves are bind_experts'). Scales of the
// gate/up experts (NVFP4 files) are not applied yet: refused.
Status bind_gemma4_experts(WeightBinder& b, const ModelConfig& cfg, int64_t il, LayerWeights& l) {
  auto name = [il](std::string_view s) { return layer_tensor(il, s); };
  for (const char* s : {"ffn_gate_exps.scale", "ffn_up_exps.scale", "ffn_gate_up_exps.scale"}) {
    if (b.has(name(s))) return error("not supported yet: tensor '{}'", name(s));
  }
  RIDGE_ASSIGN_OR_RETURN(l.router_scale, b.vector(name("ffn_gate_inp.scale"), cfg.n_embd));
  RIDGE_ASSIGN_OR_RETURN(l.exp_scale, b.optional_vector(name("ffn_down_exps.scale"), cfg.n_expert));
  RIDGE_ASSIGN_OR_RETURN(l.pre_ffn_norm_2, b.vector(name("pre_ffw_norm_2.weight"), cfg.n_embd));
  RIDGE_ASSIGN_OR_RETURN(l.post_ffn_norm_1, b.vector(name("post_ffw_norm_1.weight"), cfg.n_embd));
  RIDGE_ASSIGN_OR_RETURN(l.post_ffn_norm_2, b.vector(name("post_ffw_norm_2.weight"), cfg.n_embd));
  return ok_status();
}

Status bind_gemma4(WeightBinder& b, const ModelConfig& cfg, Weights& w) {
  const int64_t d = cfg.n_embd, p = cfg.n_embd_per_layer;
  RIDGE_ASSIGN_OR_RETURN(w.rope_freqs, b.optional_vector("rope_freqs.weight", cfg.rope_dims / 2));
  if (p > 0) {
    const int64_t all = p * cfg.n_layer;
    RIDGE_ASSIGN_OR_RETURN(w.ple_token_embd, b.matrix("per_layer_token_embd.weight", cfg.n_vocab, all));
    // Read one row per token, not streamed per step.
    w.matrix_bytes -= static_cast<uint64_t>(w.ple_token_embd.rows) * w.ple_token_embd.row_bytes;
    RIDGE_ASSIGN_OR_RETURN(w.ple_model_proj, b.matrix("per_layer_model_proj.weight", all, d));
    RIDGE_ASSIGN_OR_RETURN(w.ple_proj_norm, b.vector("per_layer_proj_norm.weight", p));
  }
  for (int64_t il = 0; il < cfg.n_layer; ++il) {
    LayerWeights& l = w.layers[static_cast<size_t>(il)];
    auto name = [il](std::string_view s) { return layer_tensor(il, s); };
    RIDGE_ASSIGN_OR_RETURN(l.q_norm, b.vector(name("attn_q_norm.weight"), cfg.layer_head_dim(il)));
    if (cfg.has_own_kv(il)) {
      RIDGE_ASSIGN_OR_RETURN(l.k_norm, b.vector(name("attn_k_norm.weight"), cfg.layer_head_dim(il)));
    }
    RIDGE_RETURN_IF_ERROR(bind_post_norms(b, cfg, il, l));
    RIDGE_ASSIGN_OR_RETURN(l.out_scale, b.optional_vector(name("layer_output_scale.weight"), 1));
    if (l.out_scale) l.output_scale = l.out_scale.data[0];
    if (cfg.moe_gemma4) RIDGE_RETURN_IF_ERROR(bind_gemma4_experts(b, cfg, il, l));
    if (p > 0) {
      RIDGE_ASSIGN_OR_RETURN(l.ple_gate, b.matrix(name("inp_gate.weight"), p, d));
      RIDGE_ASSIGN_OR_RETURN(l.ple_proj, b.matrix(name("proj.weight"), d, p));
      RIDGE_ASSIGN_OR_RETURN(l.ple_post_norm, b.vector(name("post_norm.weight"), d));
    }
  }
  return ok_status();
}

}  // namespace

const Architecture& gemma4_architecture() {
  static const Architecture kArch{"gemma4", bind_gemma4};
  return kArch;
}

const Architecture& gemma2_architecture() {
  static const Architecture kArch{"gemma2", bind_gemma2};
  return kArch;
}

const Architecture& gemma3_architecture() {
  static const Architecture kArch{"gemma3", bind_gemma3};
  return kArch;
}

}  // namespace ridge::model
