// config.json's Qwen3.5 fields (hf_qwen35.h), as llama.cpp's converter reads them
// (conversion/qwen.py: Qwen3NextModel.set_gguf_parameters, _Qwen35MRopeMixin, _QwenMtpMixin).
#include <string>

#include "checkpoint/hf_convert.h"
#include "checkpoint/hf_qwen35.h"
#include "checkpoint/json_fields.h"

namespace ridge::checkpoint {

using json = nlohmann::json;

Status parse_qwen35(const json& j, HfConfig& c) {
  RIDGE_ASSIGN_OR_RETURN(c.ssm_conv_kernel, config_positive(j, "linear_conv_kernel_dim"));
  RIDGE_ASSIGN_OR_RETURN(c.ssm_n_k_heads, config_positive(j, "linear_num_key_heads"));
  RIDGE_ASSIGN_OR_RETURN(c.ssm_n_v_heads, config_positive(j, "linear_num_value_heads"));
  RIDGE_ASSIGN_OR_RETURN(c.ssm_head_dim, config_positive(j, "linear_key_head_dim"));
  RIDGE_ASSIGN_OR_RETURN(const int64_t v_dim, config_positive(j, "linear_value_head_dim"));
  if (v_dim != c.ssm_head_dim) {
    return error("config.json: linear_value_head_dim {} differs from linear_key_head_dim {} (ridge's and "
                 "llama.cpp's delta rule take them equal)", v_dim, c.ssm_head_dim);
  }
  if (c.ssm_n_v_heads % c.ssm_n_k_heads != 0) {
    return error("config.json: linear_num_value_heads {} is not a multiple of linear_num_key_heads {}",
                 c.ssm_n_v_heads, c.ssm_n_k_heads);
  }
  RIDGE_ASSIGN_OR_RETURN(c.full_attn_interval, config_positive(j, "full_attention_interval", 4));
  if (c.full_attn_interval > c.n_layer) {
    return error("config.json: full_attention_interval {} is past the {} layers", c.full_attn_interval, c.n_layer);
  }
  // llama.cpp's converter writes the interval and its loader computes the pattern from it: a
  // layer_types list that says otherwise would run other layers than the checkpoint's.
  if (j.contains("layer_types") && !j["layer_types"].is_null()) {
    const json& types = j["layer_types"];
    if (!types.is_array() || static_cast<int64_t>(types.size()) != c.n_layer) {
      return error("config.json: 'layer_types' does not list the {} layers", c.n_layer);
    }
    for (int64_t il = 0; il < c.n_layer; ++il) {
      const json& t = types[static_cast<size_t>(il)];
      const std::string type = t.is_string() ? t.get<std::string>() : t.dump();
      if (type != "linear_attention" && type != "full_attention") {
        return error("config.json: layer_types[{}] '{}' is not a layer type convert knows (linear_attention, "
                     "full_attention)", il, type);
      }
      if ((type == "full_attention") != ((il + 1) % c.full_attn_interval == 0)) {
        return error("config.json: layer_types[{}] is '{}', not the pattern of full_attention_interval {}", il,
                     type, c.full_attn_interval);
      }
    }
  }
  if (!bool_field(j, "attn_output_gate", true)) {
    return error("config.json: attn_output_gate false (qwen35 attention gates its output)");
  }
  if (bool_field(j, "mtp_use_dedicated_embeddings", false)) {
    return error("config.json: an MTP head with embeddings of its own (mtp_use_dedicated_embeddings) is not supported");
  }
  if (j.contains("mtp_num_hidden_layers") && !j["mtp_num_hidden_layers"].is_null()) {
    const json& n = j["mtp_num_hidden_layers"];
    if (!n.is_number_integer() || n.get<int64_t>() < 0 || n.get<int64_t>() > 64) {
      return error("config.json: 'mtp_num_hidden_layers' must be an integer in [0, 64]");
    }
    c.n_mtp = n.get<int64_t>();
  }
  // The rope: rope_parameters (or rope_scaling), top-level fields where it leaves them out.
  json rope = json::object();
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    if (j.contains(key) && j[key].is_object()) {
      rope = j[key];
      break;
    }
  }
  const std::string type = string_field(rope, "rope_type", string_field(rope, "type", "default"));
  if (type != "default" && type != "mrope") {
    return error("config.json: rope type '{}' in a Qwen3.5 model (convert knows its default M-RoPE)", type);
  }
  RIDGE_ASSIGN_OR_RETURN(c.rope_theta, config_number(rope, "rope_theta", c.rope_theta));
  RIDGE_ASSIGN_OR_RETURN(const double top_factor, config_number(j, "partial_rotary_factor", 0.25));
  RIDGE_ASSIGN_OR_RETURN(const double factor, config_number(rope, "partial_rotary_factor", top_factor));
  c.rope_dims = static_cast<int64_t>(static_cast<double>(c.head_dim) * factor);  // Python's int()
  if (!(factor > 0.0 && factor <= 1.0) || c.rope_dims < 2 || c.rope_dims % 2 != 0) {
    return error("config.json: partial_rotary_factor {} of head_dim {} is not an even number of dimensions",
                 factor, c.head_dim);
  }
  c.rope_sections = {11, 11, 10};  // llama.cpp's converter's default (Qwen3.5's)
  if (rope.contains("mrope_section")) {
    const json& sec = rope["mrope_section"];
    if (!sec.is_array() || sec.empty() || sec.size() > 4) return error("config.json: 'mrope_section' is not 1 to 4 sections");
    c.rope_sections.clear();
    for (const json& v : sec) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > c.rope_dims) {
        return error("config.json: 'mrope_section' holds {}, not a section of {} dimensions", v.dump(), c.rope_dims);
      }
      c.rope_sections.push_back(v.get<int64_t>());
    }
  }
  c.rope_sections.resize(4, 0);
  return ok_status();
}

}  // namespace ridge::checkpoint
