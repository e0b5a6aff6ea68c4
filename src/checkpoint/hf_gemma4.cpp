#include "checkpoint/hf_gemma4.h"

#include <cstring>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "checkpoint/hf_convert.h"
#include "checkpoint/json_fields.h"
#include "tensor/fp16.h"

namespace ridge::checkpoint {
namespace {

using json = nlohmann::json;

// A layer tensor's Hugging Face name (after "layers.N.") and its GGUF name.
constexpr std::pair<const char*, const char*> kLayer[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"per_layer_input_gate.weight", "inp_gate.weight"},
    {"per_layer_projection.weight", "proj.weight"},
    {"post_per_layer_input_norm.weight", "post_norm.weight"},
    {"layer_scalar", "layer_output_scale.weight"},
};
// The MoE form's (enable_moe_block).
constexpr std::pair<const char*, const char*> kExperts[] = {
    {"router.proj.weight", "ffn_gate_inp.weight"},
    {"router.scale", "ffn_gate_inp.scale"},
    {"router.per_expert_scale", "ffn_down_exps.scale"},
    {"experts.gate_up_proj", "ffn_gate_up_exps.weight"},
    {"experts.down_proj", "ffn_down_exps.weight"},
    {"pre_feedforward_layernorm_2.weight", "pre_ffw_norm_2.weight"},
    {"post_feedforward_layernorm_1.weight", "post_ffw_norm_1.weight"},
    {"post_feedforward_layernorm_2.weight", "post_ffw_norm_2.weight"},
};
constexpr std::pair<const char*, const char*> kGlobal[] = {
    {"embed_tokens.weight", "token_embd.weight"},
    {"norm.weight", "output_norm.weight"},
    {"embed_tokens_per_layer.weight", "per_layer_token_embd.weight"},
    {"per_layer_model_projection.weight", "per_layer_model_proj.weight"},
    {"per_layer_projection_norm.weight", "per_layer_proj_norm.weight"},
};

// The multimodal checkpoint's towers, which convert skips.
bool other_modality(const std::string& n) {
  for (const char* p : {"model.vision_tower.", "model.embed_vision.", "model.audio_tower.", "model.embed_audio.",
                        "model.multi_modal_projector.", "vision_tower.", "audio_tower.", "multi_modal_projector."}) {
    if (n.starts_with(p)) return true;
  }
  return false;
}

// What llama.cpp's converter writes as F32: vectors, norms, the router, names not ending in .weight.
bool f32_in_gguf(const std::string& name, size_t dims) {
  return dims <= 1 || name.ends_with("_norm.weight") || name.ends_with("ffn_gate_inp.weight") ||
         !name.ends_with(".weight");
}

Status widen_f32(const Tensor& t, std::span<uint8_t> dst) {
  const auto n = static_cast<size_t>(t.n_elements());
  if (dst.size() != 4 * n) return error("tensor '{}': {} bytes for {} values", t.name, dst.size(), n);
  for (size_t i = 0; i < n; ++i) {
    float v;
    if (t.dtype == Dtype::kF32) {
      std::memcpy(&v, t.data.data() + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, t.data.data() + 2 * i, 2);
      v = t.dtype == Dtype::kBF16 ? bf16_to_f32(h) : fp16_to_f32(h);
    }
    std::memcpy(dst.data() + 4 * i, &v, 4);
  }
  return ok_status();
}

// rope_parameters' entry for a kind of layer: its base, and its type must be `want`.
Result<double> rope_theta_of(const json& rp, const char* kind, const char* want, double fallback) {
  if (!rp.contains(kind)) return fallback;
  const json& p = rp[kind];
  if (!p.is_object()) return error("config.json: rope_parameters.{} is not an object", kind);
  const std::string type = string_field(p, "rope_type", want);
  if (type != want) return error("config.json: rope_parameters.{}.rope_type '{}' (convert knows '{}')", kind, type, want);
  return config_number(p, "rope_theta", fallback);
}

// A count that may be 0 (num_kv_shared_layers, hidden_size_per_layer_input): missing or null is 0.
Result<int64_t> config_count(const json& j, const char* key) {
  if (j.contains(key) && j[key].is_number_integer() && j[key].get<int64_t>() == 0) return int64_t{0};
  return config_positive(j, key, 0);
}

}  // namespace

bool is_gemma4(const HfConfig& c) { return c.gguf_arch == "gemma4"; }

std::optional<std::string> gemma4_tensor_name(const HfConfig& c, const std::string& hf) {
  if (hf.ends_with("lm_head.weight") && !other_modality(hf)) return std::string("output.weight");
  std::string n;
  for (const char* p : {"model.language_model.", "language_model.model.", "model."}) {
    if (hf.starts_with(p)) {
      n = hf.substr(std::strlen(p));
      break;
    }
  }
  if (n.empty()) return std::nullopt;
  for (const auto& [from, to] : kGlobal) {
    if (n == from) return std::string(to);
  }
  static const std::regex layer(R"(layers\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(n, m, layer) || m[1].str().size() > 6 || std::stoll(m[1].str()) >= c.n_layer) {
    return std::nullopt;
  }
  const std::string rest = m[2].str(), blk = "blk." + m[1].str() + ".";
  for (const auto& [from, to] : kLayer) {
    if (rest == from) return blk + to;
  }
  for (const auto& [from, to] : kExperts) {
    if (rest == from && c.n_expert > 0) return blk + to;
  }
  return std::nullopt;
}


Status parse_gemma4(const json& j, HfConfig& c) {
  // head_dim and num_key_value_heads (read as the common fields) are the sliding layers'.
  c.head_dim_swa = c.head_dim;
  if (j.contains("per_layer_config") && !j["per_layer_config"].is_null()) {
    return error("config.json: per_layer_config is not supported (give global_head_dim)");
  }
  RIDGE_ASSIGN_OR_RETURN(c.head_dim, config_positive(j, "global_head_dim"));
  RIDGE_ASSIGN_OR_RETURN(c.n_head_kv_global, config_positive(j, "num_global_key_value_heads", 0));
  if (c.n_head_kv_global > 0 && c.n_head % c.n_head_kv_global != 0) {
    return error("config.json: num_attention_heads {} is not a multiple of num_global_key_value_heads {}", c.n_head,
                 c.n_head_kv_global);
  }
  if (!j.contains("layer_types") || !j["layer_types"].is_array() ||
      static_cast<int64_t>(j["layer_types"].size()) != c.n_layer) {
    return error("config.json: 'layer_types' must list the kind of each of the {} layers", c.n_layer);
  }
  for (size_t il = 0; il < j["layer_types"].size(); ++il) {
    const json& t = j["layer_types"][il];
    if (t != "sliding_attention" && t != "full_attention") {
      return error("config.json: layer_types[{}] is not sliding_attention or full_attention", il);
    }
    c.swa_layers.push_back(t == "sliding_attention" ? 1 : 0);
  }
  RIDGE_ASSIGN_OR_RETURN(c.n_swa, config_positive(j, "sliding_window"));
  RIDGE_ASSIGN_OR_RETURN(c.n_kv_shared, config_count(j, "num_kv_shared_layers"));
  if (c.n_kv_shared >= c.n_layer) return error("config.json: num_kv_shared_layers {} of {} layers", c.n_kv_shared, c.n_layer);
  RIDGE_ASSIGN_OR_RETURN(c.n_embd_per_layer, config_count(j, "hidden_size_per_layer_input"));
  c.double_wide_ffn = bool_field(j, "use_double_wide_mlp", false);
  RIDGE_ASSIGN_OR_RETURN(c.final_softcap, config_number(j, "final_logit_softcapping", 0.0));
  RIDGE_ASSIGN_OR_RETURN(c.attn_softcap, config_number(j, "attn_logit_softcapping", 0.0));
  if (c.attn_softcap != 0.0) return error("config.json: attention soft-capping in a Gemma 4 model");
  // The rope of each kind of layer: the sliding layers' plain, the global layers' "proportional".
  if (!j.contains("rope_parameters") || !j["rope_parameters"].is_object() ||
      !j["rope_parameters"].contains("full_attention")) {
    return error("config.json: missing rope_parameters.full_attention");
  }
  const json& rp = j["rope_parameters"];
  RIDGE_ASSIGN_OR_RETURN(c.rope_theta, rope_theta_of(rp, "full_attention", "proportional", 1000000.0));
  RIDGE_ASSIGN_OR_RETURN(c.rope_theta_swa, rope_theta_of(rp, "sliding_attention", "default", 0.0));
  RIDGE_ASSIGN_OR_RETURN(c.rope_fraction, config_number(rp["full_attention"], "partial_rotary_factor", 1.0));
  if (!(c.rope_fraction > 0.0 && c.rope_fraction <= 1.0) || c.head_dim % 2 != 0) {
    return error("config.json: rope_parameters.full_attention.partial_rotary_factor {} of a head of {}",
                 c.rope_fraction, c.head_dim);
  }
  if (bool_field(j, "enable_moe_block", false)) {
    RIDGE_ASSIGN_OR_RETURN(c.n_expert, config_positive(j, "num_experts"));
    RIDGE_ASSIGN_OR_RETURN(const int64_t k, config_positive(j, "num_experts_per_tok", 0));
    RIDGE_ASSIGN_OR_RETURN(c.n_expert_used, k > 0 ? Result<int64_t>(k) : config_positive(j, "top_k_experts"));
    RIDGE_ASSIGN_OR_RETURN(const int64_t f, config_positive(j, "expert_intermediate_size", 0));
    RIDGE_ASSIGN_OR_RETURN(c.n_ff_exp, f > 0 ? Result<int64_t>(f) : config_positive(j, "moe_intermediate_size"));
    if (c.n_expert < 2 || c.n_expert_used > c.n_expert) {
      return error("config.json: top_k_experts {} of num_experts {}", c.n_expert_used, c.n_expert);
    }
  }
  return ok_status();
}

Status convert_gemma4(const HfConfig& c, const SafetensorsSet& set, gguf::Writer& w) {
  const std::string a = c.gguf_arch + ".";
  auto u32 = [](int64_t v) { return gguf::make_u32(static_cast<uint32_t>(v)); };
  w.set(a + "attention.sliding_window", u32(c.n_swa));
  w.set(a + "attention.sliding_window_pattern",
        gguf::make_bool_array(std::vector<bool>(c.swa_layers.begin(), c.swa_layers.end())));
  if (c.rope_theta_swa > 0.0) w.set(a + "rope.freq_base_swa", gguf::make_f32(static_cast<float>(c.rope_theta_swa)));
  if (c.final_softcap > 0.0) w.set(a + "final_logit_softcapping", gguf::make_f32(static_cast<float>(c.final_softcap)));
  w.set(a + "attention.shared_kv_layers", u32(c.n_kv_shared));
  w.set(a + "embedding_length_per_layer_input", u32(c.n_embd_per_layer));
  w.set(a + "attention.key_length_swa", u32(c.head_dim_swa));
  w.set(a + "attention.value_length_swa", u32(c.head_dim_swa));
  w.set(a + "rope.dimension_count_swa", u32(c.head_dim_swa));
  const int64_t first_shared = c.n_layer - c.n_kv_shared;
  if (c.double_wide_ffn) {
    std::vector<int32_t> ff;
    for (int64_t il = 0; il < c.n_layer; ++il) ff.push_back(static_cast<int32_t>(il < first_shared ? c.n_ff : 2 * c.n_ff));
    w.set(a + "feed_forward_length", gguf::make_i32_array(ff));
  }
  if (c.n_head_kv_global > 0) {
    std::vector<int32_t> kv;
    for (uint8_t swa : c.swa_layers) kv.push_back(static_cast<int32_t>(swa ? c.n_head_kv : c.n_head_kv_global));
    w.set(a + "attention.head_count_kv", gguf::make_i32_array(kv));
  }
  // The global layers' "proportional" rope: the first pairs rotate, the others are held still.
  const auto half = static_cast<size_t>(c.head_dim / 2);
  const auto rotated = static_cast<size_t>(static_cast<double>(c.head_dim) * c.rope_fraction / 2.0);
  std::vector<float> freqs(half, 1e30f);
  std::fill(freqs.begin(), freqs.begin() + static_cast<std::ptrdiff_t>(std::min(rotated, half)), 1.0f);
  RIDGE_RETURN_IF_ERROR(w.add_tensor_data("rope_freqs.weight", GgmlType::kF32, {half},
                                          std::span(reinterpret_cast<const uint8_t*>(freqs.data()), half * 4)));
  bool has_embd = false, has_output = false;
  for (const Tensor* t : set.tensors()) {
    if (other_modality(t->name) || t->name.ends_with("rotary_emb.inv_freq")) continue;
    if (t->name.ends_with("lm_head.weight")) {
      if (c.tied_embeddings) continue;  // the embedding's copy
      has_output = true;
    }
    const std::optional<std::string> mapped = gemma4_tensor_name(c, t->name);
    if (!mapped) return error("tensor '{}' is not one a {} checkpoint holds", t->name, c.hf_architecture);
    const std::string name = *mapped;
    has_embd |= name == "token_embd.weight";
    RIDGE_ASSIGN_OR_RETURN(const GgmlType own, gguf_type_of(*t));
    const bool experts = name.ends_with("_exps.weight");
    if (t->shape.empty() || t->shape.size() > (experts ? 3u : 2u)) {
      return error("tensor '{}': {} dimensions", t->name, t->shape.size());
    }
    std::vector<uint64_t> shape(t->shape.rbegin(), t->shape.rend());  // ggml's order: innermost first
    if (f32_in_gguf(name, shape.size()) && own != GgmlType::kF32) {
      RIDGE_RETURN_IF_ERROR(w.add_tensor(name, GgmlType::kF32, shape, [t](std::span<uint8_t> dst) { return widen_f32(*t, dst); }));
    } else {
      RIDGE_RETURN_IF_ERROR(w.add_tensor(name, own, shape, [t](std::span<uint8_t> dst) {
        std::memcpy(dst.data(), t->data.data(), dst.size());
        return Status();
      }));
    }
  }
  if (!has_embd) return error("the checkpoint has no model.language_model.embed_tokens.weight");
  if (!has_output && !c.tied_embeddings) {
    return error("the checkpoint has no lm_head.weight and config.json does not tie it to the embeddings");
  }
  return ok_status();
}

}  // namespace ridge::checkpoint
