// Test-side writer of Hugging Face checkpoint folders from GGUF files: Hugging Face's tensor
// names, config.json fields, query/key row order and tokenizer.json form, typed here from those
// conventions (not taken from the converter under test), so that a conversion back can be
// compared with the GGUF it came from.
#pragma once

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <span>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "gguf/reader.h"
#include "hf_export_qwen35.h"
#include "model/config.h"

namespace ridge::checkpoint::testing {

using json = nlohmann::json;

// The pre-tokenizer section of each vocabulary's tokenizer.json.
inline json pre_tokenizer_of(const std::string& pre) {
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                           {"use_regex", pre == "gpt-2"}};
  if (pre == "gpt-2") return byte_level;
  const std::string digits = pre == "qwen2" ? R"(\p{N})" : R"(\p{N}{1,3})";
  std::string regex = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|)" + digits +
                      R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  if (pre == "qwen35") {  // Qwen3.5's tokenizer.json: combining marks go with the letters
    regex = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  }
  if (pre == "gpt-4o") {  // o200k's (gpt-oss's tokenizer.json)
    regex = R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
            R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
            R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  }
  return {{"type", "Sequence"},
          {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"},
                              {"invert", false}},
                             byte_level}}};
}

// tokenizer.json in Hugging Face's form for a vocab-only GGUF file.
inline std::string tokenizer_json_of(const gguf::File& f, const std::string& pre) {
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  const auto types = f.get_int_array("tokenizer.ggml.token_type");
  const auto merges = f.get_string_array("tokenizer.ggml.merges");
  EXPECT_TRUE(tokens.ok() && types.ok() && merges.ok());
  json vocab = json::object(), added = json::array();
  for (size_t i = 0; i < tokens->size(); ++i) {
    const int64_t type = (*types)[i];
    if (type == 3 || type == 4) {
      added.push_back({{"id", i}, {"content", (*tokens)[i]}, {"special", type == 3}, {"single_word", false},
                       {"lstrip", false}, {"rstrip", false}, {"normalized", type == 4}});
    } else {
      vocab[(*tokens)[i]] = i;
    }
  }
  json t = {{"version", "1.0"}, {"added_tokens", added}, {"normalizer", nullptr},
            {"pre_tokenizer", pre_tokenizer_of(pre)},
            {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", *merges}}}};
  return t.dump();
}

// Protobuf's wire format, written by hand for the test.
inline void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
inline void put_key(std::string& out, uint64_t field, uint32_t wire) { put_varint(out, field << 3 | wire); }
inline void put_bytes(std::string& out, uint64_t field, const std::string& s) {
  put_key(out, field, 2);
  put_varint(out, s.size());
  out += s;
}

// A ModelProto: pieces (1: text, 2: score, 3: type), trainer_spec (3: model type BPE, 40..43:
// unk/bos/eos/pad ids), normalizer_spec (3: add_dummy_prefix).
inline std::string model_proto(const std::vector<std::string>& tokens, const std::vector<float>& scores,
                        const std::vector<int32_t>& types, bool dummy_prefix) {
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string piece;
    put_bytes(piece, 1, tokens[i]);
    put_key(piece, 2, 5);
    char f[4];
    std::memcpy(f, &scores[i], 4);
    piece.append(f, 4);
    if (types[i] != 1) {
      put_key(piece, 3, 0);
      put_varint(piece, static_cast<uint64_t>(types[i]));
    }
    put_bytes(out, 1, piece);
  }
  std::string trainer;
  put_bytes(trainer, 1, "corpus.txt");  // a field convert skips
  put_key(trainer, 3, 0);
  put_varint(trainer, 2);
  for (const auto& [field, id] : std::vector<std::pair<int, int64_t>>{{40, 0}, {41, 1}, {42, 2}, {43, -1}}) {
    put_key(trainer, static_cast<uint64_t>(field), 0);
    put_varint(trainer, static_cast<uint64_t>(id));
  }
  put_bytes(out, 2, trainer);
  std::string normalizer;
  put_bytes(normalizer, 1, "identity");
  put_key(normalizer, 3, 0);
  put_varint(normalizer, dummy_prefix ? 1 : 0);
  put_bytes(out, 3, normalizer);
  return out;
}

// tokenizer.json (byte-level BPE) or tokenizer.model (SentencePiece) and tokenizer_config.json
// (BOS / EOS tokens, add_bos_token, the chat template) of a GGUF file's tokenizer, when it has one.
inline void write_tokenizer(const gguf::File& f, const std::filesystem::path& dir) {
  if (!f.has("tokenizer.ggml.tokens")) return;
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  if (f.get_string_or("tokenizer.ggml.model", "gpt2").value() == "llama") {
    const auto scores = f.get_float_array("tokenizer.ggml.scores");
    const auto types = f.get_int_array("tokenizer.ggml.token_type");
    std::ofstream(dir / "tokenizer.model", std::ios::binary)
        << model_proto(*tokens, std::vector<float>(scores->begin(), scores->end()),
                       std::vector<int32_t>(types->begin(), types->end()),
                       f.get_bool_or("tokenizer.ggml.add_space_prefix", true).value());
  } else {
    const std::string pre = f.get_string_or("tokenizer.ggml.pre", "gpt-2").value();
    std::ofstream(dir / "tokenizer.json") << tokenizer_json_of(f, pre);
  }
  json config = json::object();
  const std::pair<const char*, const char*> ids[] = {{"tokenizer.ggml.bos_token_id", "bos_token"},
                                                     {"tokenizer.ggml.eos_token_id", "eos_token"}};
  for (const auto& [key, field] : ids) {
    if (f.has(key)) config[field] = (*tokens)[static_cast<size_t>(f.get_int(key).value())];
  }
  if (f.has("tokenizer.ggml.add_bos_token")) config["add_bos_token"] = f.get_bool("tokenizer.ggml.add_bos_token").value();
  if (f.has("tokenizer.chat_template")) config["chat_template"] = f.get_string("tokenizer.chat_template").value();
  std::ofstream(dir / "tokenizer_config.json") << config.dump(2);
}

inline const char* hf_architecture(const std::string& arch) {
  if (arch == "llama") return "LlamaForCausalLM";
  if (arch == "qwen2") return "Qwen2ForCausalLM";
  if (arch == "qwen3moe") return "Qwen3MoeForCausalLM";
  if (arch == "qwen2moe") return "Qwen2MoeForCausalLM";
  if (arch == "gemma2") return "Gemma2ForCausalLM";
  if (arch == "gemma3") return "Gemma3ForCausalLM";
  return "Qwen3ForCausalLM";
}

// The Hugging Face name of a GGUF tensor of an `arch` model.
inline std::string hf_name(const std::string& g, const std::string& arch) {
  if (g == "token_embd.weight") return "model.embed_tokens.weight";
  if (g == "output_norm.weight") return "model.norm.weight";
  if (g == "output.weight") return "lm_head.weight";
  const size_t dot = g.find('.', 4);
  const std::string layer = g.substr(4, dot - 4), rest = g.substr(dot + 1);
  if (arch == "gemma2" || arch == "gemma3") {  // four norms a layer
    static const std::map<std::string, std::string> gemma = {
        {"post_attention_norm.weight", "post_attention_layernorm.weight"},
        {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
        {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"}};
    if (auto it = gemma.find(rest); it != gemma.end()) return "model.layers." + layer + "." + it->second;
  }
  static const std::map<std::string, std::string> names = {
      {"attn_norm.weight", "input_layernorm.weight"}, {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},   {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_q.bias", "self_attn.q_proj.bias"},
      {"attn_k.bias", "self_attn.k_proj.bias"},       {"attn_v.bias", "self_attn.v_proj.bias"},
      {"attn_q_norm.weight", "self_attn.q_norm.weight"}, {"attn_k_norm.weight", "self_attn.k_norm.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},        {"ffn_down.weight", "mlp.down_proj.weight"},
      {"ffn_gate_inp.weight", "mlp.gate.weight"},     {"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight"},
      {"ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight"},
      {"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight"},
      {"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight"}};
  return "model.layers." + layer + "." + names.at(rest);
}

// Hugging Face's query/key row order from llama.cpp's: in each head, GGUF row 2 i + j holds what
// Hugging Face keeps at row j * head_dim / 2 + i (rotate_half pairs halves, ggml adjacent values).
inline std::vector<uint8_t> to_hf_rows(std::span<const uint8_t> d, int64_t n_head, int64_t hd, size_t row_bytes) {
  std::vector<uint8_t> out(d.size());
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t r = 0; r < hd; ++r) {
      const int64_t i = r / 2, j = r % 2;
      std::memcpy(out.data() + (h * hd + j * hd / 2 + i) * row_bytes, d.data() + (h * hd + r) * row_bytes, row_bytes);
    }
  }
  return out;
}

inline const char* dtype_of(GgmlType t) {
  return t == GgmlType::kF32 ? "F32" : t == GgmlType::kF16 ? "F16" : "BF16";
}

inline void write_safetensors(const std::filesystem::path& p, const std::vector<std::pair<std::string, std::pair<json, std::vector<uint8_t>>>>& ts) {
  json header = json::object();
  std::vector<uint8_t> data;
  for (const auto& [name, entry] : ts) {
    json e = entry.first;
    e["data_offsets"] = {data.size(), data.size() + entry.second.size()};
    header[name] = e;
    data.insert(data.end(), entry.second.begin(), entry.second.end());
  }
  const std::string h = header.dump();
  std::ofstream out(p, std::ios::binary);
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((h.size() >> (8 * i)) & 0xff));
  out << h;
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

// Writes `f` (a synthetic GGUF of cfg) as a checkpoint folder; shards > 1 splits its tensors
// over that many files with an index. Qwen3.5's forms: hf_export_qwen35.h.
inline void write_checkpoint(const gguf::File& f, const model::ModelConfig& cfg, const std::filesystem::path& dir,
                             int shards, const ExportOptions& opt = {}) {
  std::filesystem::create_directories(dir);
  const bool tied = f.find_tensor("output.weight") == nullptr;
  json config = {{"architectures", {hf_architecture(cfg.arch)}}, {"hidden_size", cfg.n_embd},
                 {"intermediate_size", cfg.n_ff}, {"num_hidden_layers", cfg.n_layer},
                 {"num_attention_heads", cfg.n_head}, {"num_key_value_heads", cfg.n_head_kv},
                 {"head_dim", cfg.head_dim}, {"vocab_size", cfg.n_vocab},
                 {"max_position_embeddings", cfg.n_ctx_train}, {"rope_theta", cfg.rope_theta},
                 {"rms_norm_eps", cfg.rms_eps}, {"tie_word_embeddings", tied}, {"rope_scaling", nullptr}};
  const bool gemma = cfg.arch == "gemma2" || cfg.arch == "gemma3";
  if (gemma) {
    config["sliding_window"] = cfg.n_swa;
    config["query_pre_attn_scalar"] = cfg.head_dim;
    config["final_logit_softcapping"] = cfg.final_logit_softcap > 0 ? json(cfg.final_logit_softcap) : json(nullptr);
    config["attn_logit_softcapping"] = cfg.attn_softcap > 0 ? json(cfg.attn_softcap) : json(nullptr);
    if (cfg.arch == "gemma3") {
      config["sliding_window_pattern"] = cfg.swa_period;
      config["rope_local_base_freq"] = cfg.rope_theta_swa;
    }
  }
  if (cfg.is_moe()) {
    config["num_experts"] = cfg.n_expert;
    config["num_experts_per_tok"] = cfg.n_expert_used;
    config["moe_intermediate_size"] = cfg.n_ff_exp;
    config["norm_topk_prob"] = cfg.arch == "qwen3moe" || cfg.arch == "qwen35moe";
    config["decoder_sparse_step"] = 1;
    config["mlp_only_layers"] = json::array();
    if (cfg.n_ff_shexp > 0) config["shared_expert_intermediate_size"] = cfg.n_ff_shexp;
  }
  if (cfg.rope_freq_scale != 1.0f && cfg.yarn.factor == 0.0f) {  // linear scaling (Gemma 3's 4B and up)
    config["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 1.0f / cfg.rope_freq_scale}};
  }
  if (f.find_tensor("rope_freqs.weight") != nullptr) {  // Llama 3's scaling, a tensor in GGUF
    config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", cfg.rope_scaling.factor},
                              {"low_freq_factor", cfg.rope_scaling.low_freq_factor},
                              {"high_freq_factor", cfg.rope_scaling.high_freq_factor},
                              {"original_max_position_embeddings", cfg.rope_scaling.original_context}};
  }
  if (is_qwen35_arch(cfg.arch)) config = qwen35_config(config, f, cfg, opt);
  std::ofstream(dir / "config.json") << config.dump(2);
  write_tokenizer(f, dir);
  std::vector<std::vector<std::pair<std::string, std::pair<json, std::vector<uint8_t>>>>> files(static_cast<size_t>(shards));
  json weight_map = json::object();
  size_t k = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (t.name == "rope_freqs.weight") continue;  // config.json's rope_scaling says it
    std::span<const uint8_t> bytes(t.data, t.n_bytes);
    std::vector<uint8_t> data(bytes.begin(), bytes.end());
    const bool q = t.name.find("attn_q.") != std::string::npos, kk = t.name.find("attn_k.") != std::string::npos;
    if (cfg.arch == "llama" && (q || kk)) {
      data = to_hf_rows(bytes, q ? cfg.n_head : cfg.n_head_kv, cfg.head_dim, t.n_bytes / t.shape.back());
    }
    std::vector<int64_t> shape(t.shape.rbegin(), t.shape.rend());
    std::vector<std::pair<std::string, std::vector<uint8_t>>> named;  // what Hugging Face keeps of t
    if (is_qwen35_arch(cfg.arch)) {
      for (HfPiece& piece : qwen35_pieces(f, t, cfg, opt)) {
        if (piece.name == opt.drop) continue;
        const size_t file = k++ % static_cast<size_t>(shards);
        files[file].push_back({piece.name, {json{{"dtype", dtype_of(piece.type)}, {"shape", piece.shape}}, std::move(piece.data)}});
        weight_map[piece.name] = "model-0000" + std::to_string(file + 1) + "-of-0000" + std::to_string(shards) + ".safetensors";
      }
      continue;
    }
    if (t.name.ends_with("_exps.weight")) {  // stacked experts: one matrix per expert
      const size_t dot = t.name.find('.', 4);
      const std::string kind = t.name.substr(dot + 5, t.name.find("_exps") - dot - 5);  // gate, up, down
      const size_t per = t.n_bytes / static_cast<size_t>(shape[0]);
      for (int64_t e = 0; e < shape[0]; ++e) {
        named.push_back({"model.layers." + t.name.substr(4, dot - 4) + ".mlp.experts." + std::to_string(e) + "." +
                             kind + "_proj.weight",
                         std::vector<uint8_t>(data.begin() + e * per, data.begin() + (e + 1) * per)});
      }
      shape.erase(shape.begin());
    } else {
      if (t.name.ends_with("ffn_gate_inp_shexp.weight") && shape.size() == 1) shape = {1, shape[0]};  // a [1, n_embd] Linear
      if (gemma && t.name.ends_with("norm.weight")) {  // Gemma's RMSNorm multiplies by 1 + w
        for (size_t i = 0; i + 4 <= data.size(); i += 4) {
          float v;
          std::memcpy(&v, data.data() + i, 4);
          v -= 1.0f;
          std::memcpy(data.data() + i, &v, 4);
        }
      }
      named.push_back({hf_name(t.name, cfg.arch), data});
    }
    for (auto& [name, piece] : named) {
      if (name == opt.drop) continue;
      const size_t file = k++ % static_cast<size_t>(shards);
      files[file].push_back({name, {json{{"dtype", dtype_of(t.type)}, {"shape", shape}}, std::move(piece)}});
      weight_map[name] = "model-0000" + std::to_string(file + 1) + "-of-0000" + std::to_string(shards) + ".safetensors";
    }
  }
  if (shards == 1) {
    write_safetensors(dir / "model.safetensors", files[0]);
    return;
  }
  for (int s = 0; s < shards; ++s) {
    write_safetensors(dir / ("model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(shards) + ".safetensors"),
                      files[static_cast<size_t>(s)]);
  }
  std::ofstream(dir / "model.safetensors.index.json") << json{{"weight_map", weight_map}}.dump();
}

}  // namespace ridge::checkpoint::testing
