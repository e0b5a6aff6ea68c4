// Per-architecture defaults of ModelConfig (rope layout, biases, norms, layer patterns) and the
// small name tables: what config_from_gguf starts from before it reads a file's metadata.
#include "model/config.h"

namespace ridge::model {

bool is_moe_arch(std::string_view arch) {
  return arch == "qwen2moe" || arch == "qwen3moe" || arch == "gpt-oss" || arch == "qwen35moe";
}

std::string_view pooling_name(Pooling p) {
  switch (p) {
    case Pooling::kNone: return "none";
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kLast: return "last";
    case Pooling::kRank: return "rank";
  }
  return "none";
}

Status apply_arch_defaults(ModelConfig& cfg) {
  if (cfg.arch == "llama") {
    cfg.rope_layout = RopeLayout::kNormal;
    cfg.qkv_bias = false;
    cfg.qk_norm = false;
  } else if (cfg.arch == "qwen2") {
    cfg.rope_layout = RopeLayout::kNeox;
    cfg.qkv_bias = true;
    cfg.qk_norm = false;
  } else if (cfg.arch == "qwen3") {
    cfg.rope_layout = RopeLayout::kNeox;
    cfg.qkv_bias = false;
    cfg.qk_norm = true;
  } else if (cfg.arch == "qwen2moe") {  // qwen2's attention, experts plus a gated shared expert
    cfg.rope_layout = RopeLayout::kNeox;
    cfg.qkv_bias = true;
    cfg.qk_norm = false;
    cfg.moe_norm_topk = false;
  } else if (cfg.arch == "qwen3moe") {  // qwen3's attention, experts with renormalized top-k
    cfg.rope_layout = RopeLayout::kNeox;
    cfg.qkv_bias = false;
    cfg.qk_norm = true;
    cfg.moe_norm_topk = true;
  } else if (cfg.arch == "gpt-oss") {  // gpt-oss
    cfg.rope_layout = RopeLayout::kNeox;
    cfg.qkv_bias = true;
    cfg.qk_norm = false;
    cfg.moe_norm_topk = false;
    cfg.moe_softmax_after_topk = true;
    cfg.moe_swiglu_oai = true;
    cfg.attn_sinks = true;
    cfg.swa_period = 2;
  } else if (cfg.arch == "gemma2" || cfg.arch == "gemma3") {  // GeGLU, post-norms, scaled embeddings
    const bool gemma3 = cfg.arch == "gemma3";
    cfg.rope_layout = RopeLayout::kNeox;
    cfg.qkv_bias = false;
    cfg.qk_norm = gemma3;
    cfg.scale_embeddings = true;
    cfg.ffn_gelu = true;
    cfg.post_norms = true;
    cfg.swa_period = gemma3 ? 6 : 2;  // gemma2: even layers windowed; gemma3: 5 of every 6
  } else if (cfg.arch == "gemma4") {  // gemma3's layer, per-layer shapes and inputs (config.h)
    cfg.rope_layout = RopeLayout::kNeox;
    cfg.qkv_bias = false;
    cfg.qk_norm = true;
    cfg.scale_embeddings = true;
    cfg.ffn_gelu = true;
    cfg.post_norms = true;
    cfg.v_norm = true;
    cfg.rope_freqs_global_only = true;
  } else if (cfg.arch == "qwen35" || cfg.arch == "qwen35moe") {  // Gated DeltaNet + gated attention
    cfg.rope_layout = RopeLayout::kNeox;
    cfg.qkv_bias = false;
    cfg.qk_norm = true;
    cfg.moe_norm_topk = true;
    cfg.full_attn_interval = 4;
    cfg.attn_output_gate = true;
  } else {
    return error("unsupported architecture '{}' (supported: llama, qwen2, qwen3, qwen2moe, "
                 "qwen3moe, gpt-oss, gemma2, gemma3, gemma4, qwen35, qwen35moe)", cfg.arch);
  }
  return ok_status();
}

}  // namespace ridge::model
