// config_from_gguf: hyper-parameters from `<arch>.*` metadata, validated so that no later size
// computation can overflow or index out of range.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gguf/reader.h"
#include "model/config.h"
#include "model/config_gemma4.h"

namespace ridge::model {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 20;  // bound on any single hyper-parameter

Status check_range(std::string_view key, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) return error("metadata '{}' = {} is outside [{}, {}]", key, v, lo, hi);
  return ok_status();
}

Status read_rope_scaling(const gguf::File& f, const std::string& a, ModelConfig& c) {
  RIDGE_ASSIGN_OR_RETURN(std::string type, f.get_string_or(a + ".rope.scaling.type", ""));
  RIDGE_ASSIGN_OR_RETURN(double factor, f.get_float_or(a + ".rope.scaling.factor", 0.0));
  if (type == "none" || factor == 0.0 || factor == 1.0) return ok_status();
  if (!(factor > 0.0) || factor > 1e6) {
    return error("metadata '{}.rope.scaling.factor' = {} is not a positive factor", a, factor);
  }
  if (type.empty() || type == "linear") {  // llama.cpp's default when only a factor is given
    c.rope_freq_scale = static_cast<float>(1.0 / factor);
    return ok_status();
  }
  if (type == "llama3") {
    c.rope_scaling.factor = static_cast<float>(factor);
    RIDGE_ASSIGN_OR_RETURN(double lo, f.get_float_or(a + ".rope.scaling.low_freq_factor", 1.0));
    RIDGE_ASSIGN_OR_RETURN(double hi, f.get_float_or(a + ".rope.scaling.high_freq_factor", 4.0));
    RIDGE_ASSIGN_OR_RETURN(int64_t orig,
                           f.get_int_or(a + ".rope.scaling.original_context_length", 8192));
    if (!(lo > 0.0) || !(hi > lo) || orig <= 0) {
      return error("metadata '{}.rope.scaling.*': invalid llama3 factors (low {}, high {}, "
                   "original context {})", a, lo, hi, orig);
    }
    c.rope_scaling.low_freq_factor = static_cast<float>(lo);
    c.rope_scaling.high_freq_factor = static_cast<float>(hi);
    c.rope_scaling.original_context = orig;
    return ok_status();
  }
  if (type == "yarn") {
    c.yarn.factor = static_cast<float>(factor);
    c.rope_freq_scale = 1.0f / c.yarn.factor;
    RIDGE_ASSIGN_OR_RETURN(c.yarn.original_context,
                           f.get_int_or(a + ".rope.scaling.original_context_length", c.n_ctx_train));
    RIDGE_ASSIGN_OR_RETURN(double attn, f.get_float_or(a + ".rope.scaling.attn_factor", 1.0));
    RIDGE_ASSIGN_OR_RETURN(double log_mul,
                           f.get_float_or(a + ".rope.scaling.yarn_log_multiplier", 0.0));
    if (c.yarn.original_context <= 0 || c.yarn.original_context > (int64_t{1} << 26) ||
        !(attn > 0.0 && attn < 1e3) || !(log_mul >= 0.0 && log_mul < 1e3)) {
      return error("metadata '{}.rope.scaling.*': invalid yarn parameters (original context {}, "
                   "attn factor {}, log multiplier {})", a, c.yarn.original_context, attn, log_mul);
    }
    c.yarn.attn_factor = static_cast<float>(attn);
    c.yarn.log_multiplier = static_cast<float>(log_mul);
    return ok_status();
  }
  return error("not supported yet: rope scaling '{}' ('{}.rope.scaling.type')", type, a);
}

// Mixture-of-experts keys. An MoE architecture needs them; a dense one must not carry experts.
Status read_experts(const gguf::File& f, const std::string& a, ModelConfig& c) {
  // Gemma 4 comes dense (E2B, E4B, 31B) and as a mixture of experts (26B-A4B).
  const bool moe_arch = is_moe_arch(a) || (a == "gemma4" && f.has(a + ".expert_count"));
  RIDGE_ASSIGN_OR_RETURN(c.n_expert, f.get_int_or(a + ".expert_count", 0));
  if (!moe_arch) {
    if (c.n_expert > 1) {
      return error("not supported yet: {} experts in a '{}' model ('{}.expert_count')", c.n_expert,
                   a, a);
    }
    c.n_expert = 0;
    return ok_status();
  }
  RIDGE_ASSIGN_OR_RETURN(c.n_expert_used, f.get_int_or(a + ".expert_used_count", 0));
  RIDGE_ASSIGN_OR_RETURN(c.n_ff_exp, f.get_int_or(a + ".expert_feed_forward_length", 0));
  if (c.n_ff_exp == 0 && c.n_expert_used > 0) c.n_ff_exp = c.n_ff / c.n_expert_used;
  RIDGE_RETURN_IF_ERROR(check_range(a + ".expert_count", c.n_expert, 2, 1024));
  RIDGE_RETURN_IF_ERROR(check_range(a + ".expert_used_count", c.n_expert_used, 1, c.n_expert));
  RIDGE_RETURN_IF_ERROR(check_range(a + ".expert_feed_forward_length", c.n_ff_exp, 1, kMaxDim));
  if (a == "qwen2moe" || a == "qwen35moe") {
    RIDGE_ASSIGN_OR_RETURN(c.n_ff_shexp, f.get_int_or(a + ".expert_shared_feed_forward_length", c.n_ff));
    RIDGE_RETURN_IF_ERROR(check_range(a + ".expert_shared_feed_forward_length", c.n_ff_shexp, 1, kMaxDim));
  }
  RIDGE_ASSIGN_OR_RETURN(double scale, f.get_float_or(a + ".expert_weights_scale", 0.0));
  if (!(scale >= 0.0 && scale < 1e6)) {
    return error("metadata '{}.expert_weights_scale' = {} is not a scale", a, scale);
  }
  c.expert_weights_scale = scale == 0.0 ? 1.0f : static_cast<float>(scale);
  return ok_status();
}

// Sliding-window attention keys (gpt-oss, gemma2, gemma3): the window, the period of its layers,
// and their rope base: gemma3's `rope.freq_base_swa` (default 10000) with unscaled positions;
// gemma2's (default: the model's base) with the model's scale; gpt-oss: the model's, the only one
// supported there since its YaRN ranges follow the base. gemma2 always has a window (4096).
Status read_sliding_window(const gguf::File& f, const std::string& a, ModelConfig& c) {
  if (a == "gemma4") return ok_status();  // read_gemma4: a per-layer pattern
  RIDGE_ASSIGN_OR_RETURN(c.n_swa, f.get_int_or(a + ".attention.sliding_window", a == "gemma2" ? 4096 : 0));
  if (c.n_swa == 0) {
    if (a == "gpt-oss") return error("missing metadata '{}.attention.sliding_window'", a);
    return ok_status();  // gemma3 without a window: every layer global
  }
  if (a != "gpt-oss" && a != "gemma2" && a != "gemma3") {
    return error("not supported yet: sliding-window attention in a '{}' model", a);
  }
  RIDGE_RETURN_IF_ERROR(check_range(a + ".attention.sliding_window", c.n_swa, 1, int64_t{1} << 26));
  RIDGE_ASSIGN_OR_RETURN(c.swa_period, f.get_int_or(a + ".attention.sliding_window_pattern", c.swa_period));
  RIDGE_RETURN_IF_ERROR(check_range(a + ".attention.sliding_window_pattern", c.swa_period, 0, 4096));
  const double default_base = a == "gemma3" ? 10000.0 : c.rope_theta;
  RIDGE_ASSIGN_OR_RETURN(double base_swa, f.get_float_or(a + ".rope.freq_base_swa", default_base));
  if (!(base_swa > 1.0 && base_swa < 1e12)) {
    return error("metadata '{}.rope.freq_base_swa' = {} is not a rope base", a, base_swa);
  }
  if (a == "gpt-oss" && static_cast<float>(base_swa) != c.rope_theta) {
    return error("not supported yet: a rope base of {} in sliding-window layers ({} elsewhere)",
                 base_swa, c.rope_theta);
  }
  if (a == "gemma2" || a == "gemma3") {
    if (c.yarn.factor > 0.0f) return error("not supported yet: YaRN rope scaling in a '{}' model", a);
    c.rope_theta_swa = static_cast<float>(base_swa);
    if (a == "gemma3") c.rope_freq_scale_swa = 1.0f;  // gemma2's windows keep the model's scale
  }
  return ok_status();
}

// Gemma's soft-capping: of the final logits (gemma3: where the file gives a cap; gemma2: always,
// default 30) and of the attention scores (gemma2, default 50).
Status read_softcaps(const gguf::File& f, const std::string& a, ModelConfig& c) {
  if (a != "gemma2" && a != "gemma3" && a != "gemma4") return ok_status();
  RIDGE_ASSIGN_OR_RETURN(double final_cap, f.get_float_or(a + ".final_logit_softcapping", a == "gemma2" ? 30.0 : 0.0));
  RIDGE_ASSIGN_OR_RETURN(double attn_cap, f.get_float_or(a + ".attn_logit_softcapping", a == "gemma2" ? 50.0 : 0.0));
  if (!(final_cap >= 0.0 && final_cap < 1e6) || !(attn_cap >= 0.0 && attn_cap < 1e6)) {
    return error("metadata '{}.*_logit_softcapping' ({}, {}) are not caps", a, final_cap, attn_cap);
  }
  c.final_logit_softcap = static_cast<float>(final_cap);
  if (a == "gemma2") c.attn_softcap = static_cast<float>(attn_cap);
  return ok_status();
}

// Qwen3.5's linear-attention keys: the layer pattern, the Gated DeltaNet sizes, and the rope
// sections (interleaved M-RoPE, which for text equals NeoX rope when every rotated pair takes the
// text position: ridge checks that rather than computing vision positions).
Status read_linear_attention(const gguf::File& f, const std::string& a, ModelConfig& c) {
  if (a != "qwen35" && a != "qwen35moe") return ok_status();
  if (f.has(a + ".attention.recurrent_layers")) {
    return error("not supported yet: a per-layer pattern ('{}.attention.recurrent_layers')", a);
  }
  RIDGE_ASSIGN_OR_RETURN(c.full_attn_interval, f.get_int_or(a + ".full_attention_interval", 4));
  RIDGE_RETURN_IF_ERROR(check_range(a + ".full_attention_interval", c.full_attn_interval, 1, c.n_layer));
  struct Key {
    const char* key;
    int64_t* out;
    int64_t hi;
  };
  const Key keys[] = {{"ssm.conv_kernel", &c.ssm_conv_kernel, 64},
                      {"ssm.state_size", &c.ssm_head_dim, 1024},
                      {"ssm.group_count", &c.ssm_n_k_heads, 4096},
                      {"ssm.time_step_rank", &c.ssm_n_v_heads, 4096}};
  for (const Key& k : keys) {
    const std::string key = a + "." + k.key;
    if (!f.has(key)) return error("missing metadata '{}'", key);
    RIDGE_ASSIGN_OR_RETURN(*k.out, f.get_int(key));
    RIDGE_RETURN_IF_ERROR(check_range(key, *k.out, 1, k.hi));
  }
  if (c.ssm_n_v_heads % c.ssm_n_k_heads != 0) {
    return error("'{}.ssm.time_step_rank' = {} is not a multiple of '{}.ssm.group_count' = {}", a,
                 c.ssm_n_v_heads, a, c.ssm_n_k_heads);
  }
  RIDGE_ASSIGN_OR_RETURN(int64_t inner, f.get_int_or(a + ".ssm.inner_size", c.ssm_value_dim()));
  if (inner != c.ssm_value_dim()) {
    return error("not supported yet: '{}.ssm.inner_size' = {} differs from time_step_rank x "
                 "state_size = {} (value heads of another size than key heads)", a, inner,
                 c.ssm_value_dim());
  }
  if (f.has(a + ".rope.dimension_sections")) {
    RIDGE_ASSIGN_OR_RETURN(std::vector<int64_t> sec, f.get_int_array(a + ".rope.dimension_sections"));
    RIDGE_RETURN_IF_ERROR(check_text_rope_sections(sec, c.rope_dims).with_prefix(a + ".rope.dimension_sections"));
  }
  c.attn_output_gate = true;
  return ok_status();
}

}  // namespace

Status check_text_rope_sections(const std::vector<int64_t>& sec, int64_t rope_dims) {
  if (sec.size() != 4) return error("{} rope sections, expected 4", sec.size());
  int64_t total = 0;
  for (int64_t v : sec) {
    if (v < 0 || v > rope_dims) return error("rope section {} is out of range", v);
    total += v;
  }
  if (total == 0 || total > rope_dims) return error("rope sections add up to {}", total);
  // ggml's interleaved M-RoPE: pair i takes section s = i % total; s % 3 == 0, 1, 2 take the
  // time, height, width positions while s < 3 x their section, anything else the fourth stream.
  for (int64_t i = 0; i < rope_dims / 2; ++i) {
    const int64_t s = i % total;
    if (s >= 3 * sec[static_cast<size_t>(s % 3)]) {
      return error("not supported yet: rotary pair {} takes a vision position", i);
    }
  }
  return ok_status();
}

int64_t ModelConfig::n_recurrent_layers() const {
  int64_t n = 0;
  for (int64_t il = 0; il < n_layer; ++il) n += is_recurrent_layer(il) ? 1 : 0;
  return n;
}

int64_t ModelConfig::kv_layer(int64_t il) const {
  if (!is_recurrent_layer(il) && !has_own_kv(il)) {
    const int64_t first_shared = n_layer - n_kv_shared_layers;
    return kv_layer(first_shared - (is_swa_layer(il) ? 2 : 1));
  }
  int64_t n = 0;
  for (int64_t j = 0; j < il; ++j) n += is_recurrent_layer(j) ? 0 : 1;
  return n;
}

int64_t ModelConfig::max_q_dim() const {
  int64_t m = q_dim();
  for (int64_t il = 0; il < n_layer; ++il) m = std::max(m, layer_q_dim(il));
  return m;
}

int64_t ModelConfig::max_kv_dim() const {
  int64_t m = kv_dim();
  for (int64_t il = 0; il < n_layer; ++il) m = std::max(m, layer_kv_dim(il));
  return m;
}

int64_t ModelConfig::max_n_ff() const {
  int64_t m = n_ff;
  for (int64_t il = 0; il < n_layer; ++il) m = std::max(m, layer_n_ff(il));
  return m;
}

int64_t ModelConfig::recurrent_layer(int64_t il) const {
  int64_t n = 0;
  for (int64_t j = 0; j < il; ++j) n += is_recurrent_layer(j) ? 1 : 0;
  return n;
}

float ModelConfig::attention_scale() const {
  if (arch == "gemma4") return 1.0f;
  if ((arch == "gemma3" && n_layer == 62) || (arch == "gemma2" && n_layer == 46)) {
    return 1.0f / std::sqrt(static_cast<float>(n_embd / n_head));
  }
  return 1.0f / std::sqrt(static_cast<float>(head_dim));
}

Result<ModelConfig> config_from_gguf(const gguf::File& f) {
  ModelConfig c;
  {
    auto parts = f.get_int_or("split.count", 1);
    if (!parts.ok()) return parts.status().with_prefix(f.path());
    if (*parts > 1) {
      return error("{}: one part of a GGUF split in {} files; ridge loads single files for now (merge the parts "
                   "with llama-gguf-split --merge FIRST_PART OUT.gguf)", f.path(), *parts);
    }
  }
  c.arch = f.architecture();
  if (c.arch.empty()) return error("{}: no 'general.architecture' in metadata", f.path());
  RIDGE_RETURN_IF_ERROR(apply_arch_defaults(c).with_prefix(f.path()));
  const std::string& a = c.arch;
  auto prefix = [&](const Status& s) { return s.with_prefix(f.path()); };
  {
    auto name = f.get_string_or("general.name", c.arch);
    if (!name.ok()) return prefix(name.status());
    c.name = *name;
  }
  auto get = [&](std::string_view key, int64_t* out) -> Status {
    auto v = f.get_int(fmt::format("{}.{}", a, key));
    if (!v.ok()) return v.status();
    *out = *v;
    return ok_status();
  };
  auto get_or = [&](std::string_view key, int64_t fallback, int64_t* out) -> Status {
    auto v = f.get_int_or(fmt::format("{}.{}", a, key), fallback);
    if (!v.ok()) return v.status();
    *out = *v;
    return ok_status();
  };
  Status s;
  int64_t pooling = 0;
  if (!(s = get_or("pooling_type", 0, &pooling)).ok()) return prefix(s);
  if (pooling < 0 || pooling > 4) {
    return error("{}: '{}.pooling_type' = {} is not 0..4", f.path(), a, pooling);
  }
  c.pooling = static_cast<Pooling>(pooling);
  if (!(s = get("embedding_length", &c.n_embd)).ok()) return prefix(s);
  if (!(s = get("block_count", &c.n_layer)).ok()) return prefix(s);
  // MTP blocks (Qwen3.5) follow the trunk's; they are not run.
  if (!(s = get_or("nextn_predict_layers", 0, &c.n_nextn_layers)).ok()) return prefix(s);
  if (c.n_nextn_layers < 0 || c.n_nextn_layers >= c.n_layer) {
    return error("{}: '{}.nextn_predict_layers' = {} leaves no trunk of {} blocks", f.path(), a,
                 c.n_nextn_layers, c.n_layer);
  }
  c.n_layer -= c.n_nextn_layers;
  // A mixture-of-experts file need not carry a dense FFN size (llama.cpp reads it as optional):
  // the experts' own size stands in for it.
  if (!(s = get("attention.head_count", &c.n_head)).ok()) return prefix(s);
  if (a == "gemma4") {  // FFN widths and KV heads may be per-layer arrays
    if (!(s = read_gemma4_layer_arrays(f, c)).ok()) return prefix(s);
  } else {
    if (is_moe_arch(c.arch)) {
      RIDGE_ASSIGN_OR_RETURN(int64_t ff_exp, f.get_int_or(a + ".expert_feed_forward_length", 0));
      if (!(s = get_or("feed_forward_length", ff_exp, &c.n_ff)).ok()) return prefix(s);
    } else if (!(s = get("feed_forward_length", &c.n_ff)).ok()) {
      return prefix(s);
    }
    if (!(s = get_or("attention.head_count_kv", c.n_head, &c.n_head_kv)).ok()) return prefix(s);
  }
  if (!(s = get_or("context_length", 2048, &c.n_ctx_train)).ok()) return prefix(s);
  struct Bound {
    std::string_view key;
    int64_t value, lo, hi;
  };
  const Bound bounds[] = {{"embedding_length", c.n_embd, 1, kMaxDim},
                          {"block_count", c.n_layer, 1, 4096},
                          {"feed_forward_length", c.n_ff, 1, kMaxDim},
                          {"attention.head_count", c.n_head, 1, 4096},
                          {"attention.head_count_kv", c.n_head_kv, 1, c.n_head},
                          {"context_length", c.n_ctx_train, 1, int64_t{1} << 26}};
  for (const Bound& b : bounds) {
    s = check_range(fmt::format("{}.{}", a, b.key), b.value, b.lo, b.hi);
    if (!s.ok()) return prefix(s);
  }
  if (c.n_head % c.n_head_kv != 0) {
    return error("{}: {} attention heads are not a multiple of {} KV heads", f.path(), c.n_head,
                 c.n_head_kv);
  }
  const int64_t default_head_dim = c.n_embd % c.n_head == 0 ? c.n_embd / c.n_head : 0;
  if (!(s = get_or("attention.key_length", default_head_dim, &c.head_dim)).ok()) return prefix(s);
  int64_t value_len = 0;
  if (!(s = get_or("attention.value_length", c.head_dim, &value_len)).ok()) return prefix(s);
  if (!(s = check_range(a + ".attention.key_length", c.head_dim, 2, 4096)).ok()) return prefix(s);
  if (value_len != c.head_dim) {
    return error("{}: not supported yet: value length {} differs from key length {}", f.path(),
                 value_len, c.head_dim);
  }
  if (!(s = get_or("rope.dimension_count", c.head_dim, &c.rope_dims)).ok()) return prefix(s);
  if (c.rope_dims < 0 || c.rope_dims > c.head_dim || c.rope_dims % 2 != 0) {
    return error("{}: '{}.rope.dimension_count' = {} must be even and at most the head size {}",
                 f.path(), a, c.rope_dims, c.head_dim);
  }
  auto eps = f.get_float_or(a + ".attention.layer_norm_rms_epsilon", 1e-5);
  if (!eps.ok()) return prefix(eps.status());
  auto theta = f.get_float_or(a + ".rope.freq_base", 10000.0);
  if (!theta.ok()) return prefix(theta.status());
  if (!(*eps > 0.0 && *eps < 1.0) || !(*theta > 1.0 && *theta < 1e12)) {
    return error("{}: invalid rms epsilon {} or rope base {}", f.path(), *eps, *theta);
  }
  c.rms_eps = static_cast<float>(*eps);
  c.rope_theta = static_cast<float>(*theta);
  if (!(s = read_rope_scaling(f, a, c)).ok()) return prefix(s);
  if (!(s = read_experts(f, a, c)).ok()) return prefix(s);
  if (!(s = read_sliding_window(f, a, c)).ok()) return prefix(s);
  if (!(s = read_softcaps(f, a, c)).ok()) return prefix(s);
  if (!(s = read_linear_attention(f, a, c)).ok()) return prefix(s);
  if (a == "gemma4" && !(s = read_gemma4(f, c)).ok()) return prefix(s);

  // The vocabulary size is the embedding table's row count (the tokenizer may list more).
  const gguf::TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr) return error("{}: missing tensor 'token_embd.weight'", f.path());
  if (embd->shape.size() != 2 || embd->shape[0] != static_cast<uint64_t>(c.n_embd) ||
      embd->shape[1] == 0 || embd->shape[1] > static_cast<uint64_t>(1) << 24) {
    return error("{}: tensor 'token_embd.weight' does not have shape [{}, n_vocab]", f.path(),
                 c.n_embd);
  }
  c.n_vocab = static_cast<int64_t>(embd->shape[1]);
  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  return c;
}

}  // namespace ridge::model
