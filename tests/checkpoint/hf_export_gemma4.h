// Test-side writer of Gemma 4 checkpoint folders (Gemma4ForCausalLM, or the multimodal
// Gemma4ForConditionalGeneration with its text model under model.language_model. and a
// text_config) from a gemma4 GGUF file: Hugging Face's names (per_layer_input_gate, layer_scalar,
// router.proj, experts.gate_up_proj ...) and config.json's fields as google/gemma-4-* state them
// (layer_types, global_head_dim, num_global_key_value_heads, rope_parameters per kind of layer
// with the global layers' "proportional" rope, use_double_wide_mlp, enable_moe_block). Typed here
// from those conventions, not taken from the converter under test. rope_freqs is left out (the
// partial_rotary_factor says it).
#pragma once

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "hf_export.h"
#include "model/config.h"

namespace ridge::checkpoint::testing {

struct Gemma4Export {
  bool multimodal = false;          // Gemma4ForConditionalGeneration, with a vision tower tensor
  bool narrow_vectors = false;      // F32 vectors and norms in BF16 (their values BF16's)
  std::string drop;                 // a Hugging Face tensor to leave out
  nlohmann::json config_edit = nlohmann::json::object();  // merged over the text config
};

// The Hugging Face name of a gemma4 GGUF tensor, `p` the text model's prefix.
inline std::string gemma4_hf_name(const std::string& g, const std::string& p) {
  static const std::map<std::string, std::string> globals = {
      {"token_embd.weight", "embed_tokens.weight"},
      {"output_norm.weight", "norm.weight"},
      {"per_layer_token_embd.weight", "embed_tokens_per_layer.weight"},
      {"per_layer_model_proj.weight", "per_layer_model_projection.weight"},
      {"per_layer_proj_norm.weight", "per_layer_projection_norm.weight"}};
  if (auto it = globals.find(g); it != globals.end()) return p + it->second;
  static const std::map<std::string, std::string> layer = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"attn_q_norm.weight", "self_attn.q_norm.weight"},
      {"attn_k_norm.weight", "self_attn.k_norm.weight"},
      {"post_attention_norm.weight", "post_attention_layernorm.weight"},
      {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
      {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"},
      {"inp_gate.weight", "per_layer_input_gate.weight"},
      {"proj.weight", "per_layer_projection.weight"},
      {"post_norm.weight", "post_per_layer_input_norm.weight"},
      {"layer_output_scale.weight", "layer_scalar"},
      {"ffn_gate_inp.weight", "router.proj.weight"},
      {"ffn_gate_inp.scale", "router.scale"},
      {"ffn_down_exps.scale", "router.per_expert_scale"},
      {"ffn_gate_up_exps.weight", "experts.gate_up_proj"},
      {"ffn_down_exps.weight", "experts.down_proj"},
      {"pre_ffw_norm_2.weight", "pre_feedforward_layernorm_2.weight"},
      {"post_ffw_norm_1.weight", "post_feedforward_layernorm_1.weight"},
      {"post_ffw_norm_2.weight", "post_feedforward_layernorm_2.weight"}};
  const size_t dot = g.find('.', 4);
  return p + "layers." + g.substr(4, dot - 4) + "." + layer.at(g.substr(dot + 1));
}

inline json gemma4_text_config(const gguf::File& f, const model::ModelConfig& cfg) {
  json types = json::array();
  for (int64_t il = 0; il < cfg.n_layer; ++il) types.push_back(cfg.is_swa_layer(il) ? "sliding_attention" : "full_attention");
  // The rotated fraction of the global layers' pairs: rope_freqs' ones.
  const gguf::TensorInfo* rf = f.find_tensor("rope_freqs.weight");
  EXPECT_NE(rf, nullptr);
  int64_t ones = 0;
  for (uint64_t i = 0; rf != nullptr && i < rf->shape[0]; ++i) {
    float v;
    std::memcpy(&v, rf->data + 4 * i, 4);
    ones += v == 1.0f;
  }
  const int64_t hd_swa = cfg.head_dim_swa > 0 ? cfg.head_dim_swa : cfg.head_dim;
  json c = {{"model_type", "gemma4_text"}, {"hidden_size", cfg.n_embd}, {"intermediate_size", cfg.n_ff},
            {"num_hidden_layers", cfg.n_layer}, {"num_attention_heads", cfg.n_head},
            {"num_key_value_heads", cfg.n_head_kv_swa > 0 ? cfg.n_head_kv_swa : cfg.n_head_kv},
            {"head_dim", hd_swa}, {"global_head_dim", cfg.head_dim}, {"vocab_size", cfg.n_vocab},
            {"vocab_size_per_layer_input", cfg.n_vocab},
            {"max_position_embeddings", cfg.n_ctx_train}, {"rms_norm_eps", cfg.rms_eps},
            {"sliding_window", cfg.n_swa}, {"layer_types", types},
            {"rope_parameters", {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", cfg.rope_theta_swa}}},
                                 {"full_attention", {{"rope_type", "proportional"},
                                                     {"partial_rotary_factor", 2.0 * static_cast<double>(ones) / static_cast<double>(cfg.head_dim)},
                                                     {"rope_theta", cfg.rope_theta}}}}},
            {"final_logit_softcapping", cfg.final_logit_softcap > 0 ? json(cfg.final_logit_softcap) : json(nullptr)},
            {"attn_logit_softcapping", nullptr}, {"num_kv_shared_layers", cfg.n_kv_shared_layers},
            {"hidden_size_per_layer_input", cfg.n_embd_per_layer},
            {"use_double_wide_mlp", !cfg.n_ff_layers.empty()}, {"attention_k_eq_v", true},
            {"hidden_activation", "gelu_pytorch_tanh"}, {"tie_word_embeddings", true},
            {"enable_moe_block", cfg.is_moe()}};
  if (cfg.n_head_kv_swa > 0) c["num_global_key_value_heads"] = cfg.n_head_kv;
  if (cfg.is_moe()) {
    c["num_experts"] = cfg.n_expert;
    c["top_k_experts"] = cfg.n_expert_used;
    c["moe_intermediate_size"] = cfg.n_ff_exp;
  }
  return c;
}

inline void write_gemma4_checkpoint(const gguf::File& f, const model::ModelConfig& cfg, const std::filesystem::path& dir,
                                    const Gemma4Export& opt = {}) {
  std::filesystem::create_directories(dir);
  json text = gemma4_text_config(f, cfg);
  text.merge_patch(opt.config_edit);
  json config = opt.multimodal ? json{{"architectures", {"Gemma4ForConditionalGeneration"}}, {"model_type", "gemma4"},
                                      {"text_config", text}, {"vision_config", {{"hidden_size", 16}}}}
                               : text;
  if (!opt.multimodal) config["architectures"] = {"Gemma4ForCausalLM"};
  std::ofstream(dir / "config.json") << config.dump(2);
  write_tokenizer(f, dir);
  const std::string prefix = opt.multimodal ? "model.language_model." : "model.";
  std::vector<std::pair<std::string, std::pair<json, std::vector<uint8_t>>>> out;
  if (opt.multimodal) {  // a tower tensor convert skips
    out.push_back({"model.vision_tower.encoder.layers.0.self_attn.q_proj.linear.weight",
                   {json{{"dtype", "F32"}, {"shape", {2, 2}}}, std::vector<uint8_t>(16, 0)}});
  }
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (t.name == "rope_freqs.weight") continue;
    const std::string name = gemma4_hf_name(t.name, prefix);
    if (name == opt.drop) continue;
    std::vector<uint8_t> data(t.data, t.data + t.n_bytes);
    GgmlType type = t.type;
    if (opt.narrow_vectors && type == GgmlType::kF32) {  // F32 -> BF16 (exact for BF16 values)
      std::vector<uint8_t> narrow(data.size() / 2);
      for (size_t i = 0; i < narrow.size() / 2; ++i) std::memcpy(narrow.data() + 2 * i, data.data() + 4 * i + 2, 2);
      data = std::move(narrow);
      type = GgmlType::kBF16;
    }
    std::vector<int64_t> shape(t.shape.rbegin(), t.shape.rend());
    out.push_back({name, {json{{"dtype", dtype_of(type)}, {"shape", shape}}, std::move(data)}});
  }
  write_safetensors(dir / "model.safetensors", out);
}

}  // namespace ridge::checkpoint::testing
