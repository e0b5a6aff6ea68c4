// Test-side writer of gpt-oss checkpoint folders (GptOssForCausalLM) from a gpt-oss GGUF file:
// Hugging Face's names (self_attn.sinks, mlp.router, mlp.experts.gate_up_proj_*), config.json's
// fields as openai/gpt-oss-20b states them, and the experts in OpenAI's MXFP4 packing (byte j of
// a block holds values 2j and 2j + 1, low nibble first; the scale bytes apart) with gate and up
// rows interleaved, or dequantized ([n_expert, in, out], as transformers saves a bf16 copy). Typed
// here from those conventions, not taken from the converter under test.
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

struct GptOssExport {
  std::string drop;                // a Hugging Face tensor to leave out
  bool narrow_vectors = false;     // vectors, biases, router in BF16 (their values BF16's)
  nlohmann::json config_edit = nlohmann::json::object();  // merged over config.json
};

// The MXFP4 parts' bytes (safetensors U8; no GGUF type of their own).
inline constexpr GgmlType kRaw = GgmlType::kI8;
inline const char* gpt_oss_dtype(GgmlType t) {
  return t == GgmlType::kF32 ? "F32" : t == GgmlType::kF16 ? "F16" : t == GgmlType::kBF16 ? "BF16" : "U8";
}

// Row-major [n, rows, cols] values of a ggml [cols, rows, n] tensor: element (e, r, k).
inline size_t ggml_index(const gguf::TensorInfo& t, uint64_t e, uint64_t r, uint64_t k) {
  return static_cast<size_t>((e * t.shape[1] + r) * t.shape[0] + k);
}

// `a`'s metadata and tensors, its experts' matrices those of `q` (a file of the same model whose
// experts are MXFP4: `ridge synth --type mxfp4`); with `bf16_values` its F32 tensors rounded down
// to BF16's values (so that a BF16 checkpoint holds them exactly).
inline std::vector<uint8_t> with_experts_of(const gguf::File& a, const gguf::File* q, bool bf16_values) {
  gguf::Writer w;
  for (const auto& [key, value] : a.metadata()) w.set(key, value);
  for (const gguf::TensorInfo& t : a.tensors()) {
    const gguf::TensorInfo* src = q != nullptr && t.name.ends_with("_exps.weight") ? q->find_tensor(t.name) : &t;
    std::vector<uint8_t> data(src->data, src->data + src->n_bytes);
    if (bf16_values && src->type == GgmlType::kF32) {
      for (size_t i = 0; i < data.size(); i += 4) data[i] = data[i + 1] = 0;
    }
    EXPECT_TRUE(w.add_tensor_data(t.name, src->type, src->shape, data).ok());
  }
  auto image = w.write_to_memory();
  EXPECT_TRUE(image.ok());
  return image.ok() ? *image : std::vector<uint8_t>{};
}

inline void write_gpt_oss_checkpoint(const gguf::File& f, const model::ModelConfig& cfg,
                                     const std::filesystem::path& dir, const GptOssExport& opt = {}) {
  std::filesystem::create_directories(dir);
  json layer_types = json::array();
  for (int64_t il = 0; il < cfg.n_layer; ++il) layer_types.push_back(il % 2 == 0 ? "sliding_attention" : "full_attention");
  json config = {{"architectures", {"GptOssForCausalLM"}}, {"model_type", "gpt_oss"},
                 {"hidden_size", cfg.n_embd}, {"intermediate_size", cfg.n_ff_exp},
                 {"num_hidden_layers", cfg.n_layer}, {"num_attention_heads", cfg.n_head},
                 {"num_key_value_heads", cfg.n_head_kv}, {"head_dim", cfg.head_dim}, {"vocab_size", cfg.n_vocab},
                 {"max_position_embeddings", cfg.n_ctx_train}, {"rope_theta", cfg.rope_theta},
                 {"rms_norm_eps", cfg.rms_eps}, {"tie_word_embeddings", false}, {"attention_bias", true},
                 {"num_local_experts", cfg.n_expert}, {"num_experts_per_tok", cfg.n_expert_used},
                 {"experts_per_token", cfg.n_expert_used}, {"sliding_window", cfg.n_swa},
                 {"layer_types", layer_types}, {"swiglu_limit", 7.0}, {"hidden_act", "silu"},
                 {"rope_scaling", {{"rope_type", "yarn"}, {"factor", cfg.yarn.factor}, {"beta_fast", 32.0},
                                   {"beta_slow", 1.0}, {"truncate", false},
                                   {"original_max_position_embeddings", cfg.yarn.original_context}}},
                 {"quantization_config", {{"quant_method", "mxfp4"}}}};
  config.merge_patch(opt.config_edit);
  std::ofstream(dir / "config.json") << config.dump(2);
  write_tokenizer(f, dir);
  static const std::map<std::string, std::string> names = {
      {"attn_norm.weight", "input_layernorm.weight"}, {"post_attention_norm.weight", "post_attention_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},   {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},   {"attn_output.weight", "self_attn.o_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},       {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},       {"attn_output.bias", "self_attn.o_proj.bias"},
      {"attn_sinks.weight", "self_attn.sinks"},       {"ffn_gate_inp.weight", "mlp.router.weight"},
      {"ffn_gate_inp.bias", "mlp.router.bias"},       {"ffn_down_exps.bias", "mlp.experts.down_proj_bias"}};
  std::vector<std::pair<std::string, std::pair<json, std::vector<uint8_t>>>> out;
  auto put = [&](const std::string& name, GgmlType type, std::vector<int64_t> shape, std::vector<uint8_t> data) {
    if (name == opt.drop) return;
    if (opt.narrow_vectors && type == GgmlType::kF32) {  // F32 -> BF16 (exact for BF16 values)
      std::vector<uint8_t> narrow(data.size() / 2);
      for (size_t i = 0; i < narrow.size() / 2; ++i) std::memcpy(narrow.data() + 2 * i, data.data() + 4 * i + 2, 2);
      data = std::move(narrow);
      type = GgmlType::kBF16;
    }
    out.push_back({name, {json{{"dtype", gpt_oss_dtype(type)}, {"shape", shape}}, std::move(data)}});
  };
  for (const gguf::TensorInfo& t : f.tensors()) {
    std::vector<uint8_t> data(t.data, t.data + t.n_bytes);
    std::vector<int64_t> shape(t.shape.rbegin(), t.shape.rend());
    if (t.name == "token_embd.weight") { put("model.embed_tokens.weight", t.type, shape, data); continue; }
    if (t.name == "output.weight") { put("lm_head.weight", t.type, shape, data); continue; }
    if (t.name == "output_norm.weight") { put("model.norm.weight", t.type, shape, data); continue; }
    const size_t dot = t.name.find('.', 4);
    const std::string layer = t.name.substr(4, dot - 4), rest = t.name.substr(dot + 1);
    const std::string p = "model.layers." + layer + ".mlp.experts.";
    if (auto it = names.find(rest); it != names.end()) {
      put("model.layers." + layer + "." + it->second, t.type, shape, data);
      continue;
    }
    if (rest.starts_with("ffn_up_exps.")) continue;  // with the gate's
    const int64_t ne = shape[0];
    if (rest == "ffn_gate_exps.bias") {  // [n_expert, 2 n_ff]: gate, up, gate, up ...
      const gguf::TensorInfo* up = f.find_tensor("blk." + layer + ".ffn_up_exps.bias");
      const int64_t ff = shape[1];
      std::vector<uint8_t> both(2 * t.n_bytes);
      for (int64_t e = 0; e < ne; ++e) {
        for (int64_t r = 0; r < ff; ++r) {
          std::memcpy(both.data() + ((e * ff + r) * 2) * 4, t.data + (e * ff + r) * 4, 4);
          std::memcpy(both.data() + ((e * ff + r) * 2 + 1) * 4, up->data + (e * ff + r) * 4, 4);
        }
      }
      put(p + "gate_up_proj_bias", t.type, {ne, 2 * ff}, both);
      continue;
    }
    const bool gate = rest == "ffn_gate_exps.weight";
    ASSERT_TRUE(gate || rest == "ffn_down_exps.weight") << t.name;
    // The experts' matrices, [n_expert, rows, cols]; gate and up interleave their rows.
    std::vector<const gguf::TensorInfo*> parts = {&t};
    if (gate) parts.push_back(f.find_tensor("blk." + layer + ".ffn_up_exps.weight"));
    const int64_t rows = shape[1], cols = shape[2], n = static_cast<int64_t>(parts.size());
    const std::string kind = gate ? "gate_up_proj" : "down_proj";
    if (t.type == GgmlType::kMXFP4) {
      const int64_t nb = cols / 32;
      std::vector<uint8_t> blocks(static_cast<size_t>(ne * rows * n * nb * 16)), scales(static_cast<size_t>(ne * rows * n * nb));
      for (int64_t e = 0; e < ne; ++e) {
        for (int64_t r = 0; r < rows * n; ++r) {
          const uint8_t* src = parts[static_cast<size_t>(r % n)]->data + ((e * rows + r / n) * nb) * 17;
          for (int64_t b = 0; b < nb; ++b, src += 17) {
            const size_t at = static_cast<size_t>((e * rows * n + r) * nb + b);
            scales[at] = src[0];
            auto nib = [src](int x) { return x < 16 ? src[1 + x] & 0x0F : src[1 + x - 16] >> 4; };
            for (int j = 0; j < 16; ++j) blocks[at * 16 + j] = static_cast<uint8_t>(nib(2 * j) | nib(2 * j + 1) << 4);
          }
        }
      }
      put(p + kind + "_blocks", kRaw, {ne, rows * n, nb, 16}, blocks);
      put(p + kind + "_scales", kRaw, {ne, rows * n, nb}, scales);
    } else {  // dequantized: [n_expert, cols (in), rows * n (out)]
      const size_t es = t.n_bytes / t.n_elements;
      std::vector<uint8_t> m(t.n_bytes * static_cast<size_t>(n));
      for (int64_t e = 0; e < ne; ++e) {
        for (int64_t r = 0; r < rows * n; ++r) {
          for (int64_t k = 0; k < cols; ++k) {
            std::memcpy(m.data() + static_cast<size_t>((e * cols + k) * rows * n + r) * es,
                        parts[static_cast<size_t>(r % n)]->data + ggml_index(t, e, r / n, k) * es, es);
          }
        }
      }
      put(p + kind, t.type, {ne, cols, rows * n}, m);
    }
  }
  write_safetensors(dir / "model.safetensors", out);
}

}  // namespace ridge::checkpoint::testing
