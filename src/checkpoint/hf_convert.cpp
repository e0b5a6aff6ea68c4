#include "checkpoint/hf_convert.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <regex>

#include "base/llama3_rope.h"
#include "checkpoint/hf_experts.h"
#include "checkpoint/hf_gemma.h"
#include "checkpoint/hf_gemma4.h"
#include "checkpoint/hf_gpt_oss.h"
#include "checkpoint/hf_qwen35.h"
#include "checkpoint/json_fields.h"

namespace ridge::checkpoint {
namespace {

using json = nlohmann::json;

struct ArchName {
  const char* hf;
  const char* gguf;
};
constexpr ArchName kArchitectures[] = {
    {"LlamaForCausalLM", "llama"},      {"Qwen2ForCausalLM", "qwen2"},      {"Qwen3ForCausalLM", "qwen3"},
    {"Qwen3MoeForCausalLM", "qwen3moe"}, {"Qwen2MoeForCausalLM", "qwen2moe"},
    {"Gemma2ForCausalLM", "gemma2"},    {"Gemma3ForCausalLM", "gemma3"},
    {"Gemma3ForConditionalGeneration", "gemma3"}, {"Qwen3_5ForCausalLM", "qwen35"},
    {"Qwen3_5ForConditionalGeneration", "qwen35"}, {"Qwen3_5MoeForCausalLM", "qwen35moe"},
    {"Qwen3_5MoeForConditionalGeneration", "qwen35moe"}, {"GptOssForCausalLM", "gpt-oss"},
    {"Gemma4ForCausalLM", "gemma4"},    {"Gemma4ForConditionalGeneration", "gemma4"}};

// The experts' fields of config.json. Every layer a mixture (decoder_sparse_step 1, no
// mlp_only_layers), and the top-k weights renormalized as the GGUF architecture's graph does
// (qwen3moe, qwen35moe: yes, qwen2moe: no): what llama.cpp's graph computes for these
// architectures. qwen2moe and qwen35moe have a shared expert.
Status parse_experts(const json& j, HfConfig& c) {
  RIDGE_ASSIGN_OR_RETURN(c.n_expert, config_positive(j, "num_experts"));
  RIDGE_ASSIGN_OR_RETURN(c.n_expert_used, config_positive(j, "num_experts_per_tok"));
  RIDGE_ASSIGN_OR_RETURN(c.n_ff_exp, config_positive(j, "moe_intermediate_size"));
  if (c.n_expert < 2 || c.n_expert_used > c.n_expert) {
    return error("config.json: num_experts_per_tok {} of num_experts {}", c.n_expert_used, c.n_expert);
  }
  if (c.gguf_arch == "qwen2moe" || c.gguf_arch == "qwen35moe") {
    RIDGE_ASSIGN_OR_RETURN(c.n_ff_shexp, config_positive(j, "shared_expert_intermediate_size"));
  }
  RIDGE_ASSIGN_OR_RETURN(const int64_t step, config_positive(j, "decoder_sparse_step", 1));
  if (step != 1 || (j.contains("mlp_only_layers") && !j["mlp_only_layers"].is_null() &&
                    !(j["mlp_only_layers"].is_array() && j["mlp_only_layers"].empty()))) {
    return error("config.json: dense layers among the experts (decoder_sparse_step {}, mlp_only_layers) are "
                 "not supported", step);
  }
  const bool want_norm = c.gguf_arch == "qwen3moe" || c.gguf_arch == "qwen35moe";
  if (j.contains("norm_topk_prob") && j["norm_topk_prob"].is_boolean() && j["norm_topk_prob"].get<bool>() != want_norm) {
    return error("config.json: norm_topk_prob {} (a {} model {} its top-k weights)", j["norm_topk_prob"].get<bool>(),
                 c.gguf_arch, want_norm ? "renormalizes" : "does not renormalize");
  }
  return ok_status();
}

// Tensors a checkpoint may hold that the model does not read.
bool ignored(const std::string& hf_name) { return hf_name.ends_with("rotary_emb.inv_freq"); }

}  // namespace

Result<GgmlType> gguf_type_of(const Tensor& t) {
  switch (t.dtype) {
    case Dtype::kF32: return GgmlType::kF32;
    case Dtype::kF16: return GgmlType::kF16;
    case Dtype::kBF16: return GgmlType::kBF16;
    default: break;
  }
  return error("tensor '{}': dtype {} (convert reads F32, F16 and BF16)", t.name, dtype_name(t.dtype));
}

namespace {
Result<HfConfig> parse_config(const std::string& text);
}  // namespace

Result<HfConfig> parse_hf_config(const std::string& text) {
  // Fields are read by their checked types; a shape nlohmann still refuses is the file's error.
  try {
    return parse_config(text);
  } catch (const nlohmann::json::exception& e) {
    return error("config.json: malformed field ({})", e.what());
  }
}

namespace {

Result<HfConfig> parse_config(const std::string& text) {
  const json top = json::parse(text, nullptr, false);
  if (!top.is_object()) return error("config.json: not a JSON object");
  HfConfig c;
  if (!top.contains("architectures") || !top["architectures"].is_array() || top["architectures"].empty() ||
      !top["architectures"][0].is_string()) {
    return error("config.json: missing 'architectures'");
  }
  c.hf_architecture = top["architectures"][0].get<std::string>();
  // A multimodal checkpoint keeps its language model's fields in text_config (only those that
  // differ from the defaults: Gemma 3's are filled in below).
  json j = top.contains("text_config") && top["text_config"].is_object() ? top["text_config"] : top;
  // Qwen3.5's multimodal form keeps some fields (tie_word_embeddings) beside text_config: the
  // two merged, text_config's first, as llama.cpp's converter reads them.
  if (c.hf_architecture.starts_with("Qwen3_5") && top.contains("text_config") && top["text_config"].is_object()) {
    json merged = top;
    merged.erase("text_config");
    merged.update(j);
    j = std::move(merged);
  }
  if (c.hf_architecture == "Gemma3ForConditionalGeneration" || c.hf_architecture == "Gemma3ForCausalLM") {
    const std::pair<const char*, int64_t> defaults[] = {{"num_attention_heads", 8}, {"num_key_value_heads", 4},
                                                        {"head_dim", 256}, {"vocab_size", 262208},
                                                        {"rope_theta", 1000000}, {"max_position_embeddings", 131072}};
    for (const auto& [key, value] : defaults) {
      if (!j.contains(key) || j[key].is_null()) j[key] = value;
    }
    if (!j.contains("tie_word_embeddings")) j["tie_word_embeddings"] = true;
  }
  for (const ArchName& a : kArchitectures) {
    if (c.hf_architecture == a.hf) c.gguf_arch = a.gguf;
  }
  if (c.gguf_arch.empty()) {
    return error("config.json: architecture {} is not one convert knows (LlamaForCausalLM, "
                 "Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, Qwen2MoeForCausalLM, Gemma2ForCausalLM, "
                 "Gemma3ForCausalLM, Gemma3ForConditionalGeneration, Qwen3_5ForCausalLM, "
                 "Qwen3_5ForConditionalGeneration, Qwen3_5MoeForCausalLM, Qwen3_5MoeForConditionalGeneration, "
                 "GptOssForCausalLM, Gemma4ForCausalLM, Gemma4ForConditionalGeneration)",
                 c.hf_architecture);
  }
  RIDGE_ASSIGN_OR_RETURN(c.n_embd, config_positive(j, "hidden_size"));
  // A Qwen3.5 mixture need not state a dense width (llama.cpp's converter writes it when given).
  RIDGE_ASSIGN_OR_RETURN(c.n_ff, config_positive(j, "intermediate_size", c.gguf_arch == "qwen35moe" ? 0 : -1));
  RIDGE_ASSIGN_OR_RETURN(c.n_layer, config_positive(j, "num_hidden_layers"));
  RIDGE_ASSIGN_OR_RETURN(c.n_head, config_positive(j, "num_attention_heads"));
  RIDGE_ASSIGN_OR_RETURN(c.n_head_kv, config_positive(j, "num_key_value_heads", c.n_head));
  if (c.n_embd % c.n_head != 0 && !j.contains("head_dim")) {
    return error("config.json: hidden_size {} is not a multiple of num_attention_heads {}", c.n_embd, c.n_head);
  }
  RIDGE_ASSIGN_OR_RETURN(c.head_dim, config_positive(j, "head_dim", c.n_embd / c.n_head));
  if (c.n_head % c.n_head_kv != 0) {
    return error("config.json: num_attention_heads {} is not a multiple of num_key_value_heads {}", c.n_head,
                 c.n_head_kv);
  }
  RIDGE_ASSIGN_OR_RETURN(c.n_vocab, config_positive(j, "vocab_size"));
  RIDGE_ASSIGN_OR_RETURN(c.n_ctx, config_positive(j, "max_position_embeddings", 4096));
  RIDGE_ASSIGN_OR_RETURN(c.rope_theta, config_number(j, "rope_theta", 10000.0));
  RIDGE_ASSIGN_OR_RETURN(c.rms_eps, config_number(j, "rms_norm_eps", 1e-6));
  if (c.gguf_arch.ends_with("moe")) RIDGE_RETURN_IF_ERROR(parse_experts(j, c));
  c.tied_embeddings = is_gemma(c) || is_gemma4(c);  // Gemma keeps no lm_head
  if (j.contains("tie_word_embeddings") && j["tie_word_embeddings"].is_boolean()) {
    c.tied_embeddings = j["tie_word_embeddings"].get<bool>();
  }
  if (is_gemma(c)) RIDGE_RETURN_IF_ERROR(parse_gemma(j, c));
  if (is_qwen35(c)) {  // its rope (rope_parameters) read there
    RIDGE_RETURN_IF_ERROR(parse_qwen35(j, c));
  } else if (is_gemma4(c)) {  // likewise
    RIDGE_RETURN_IF_ERROR(parse_gemma4(j, c));
  } else if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    const json& s = j["rope_scaling"];
    if (!s.is_object()) return error("config.json: 'rope_scaling' must be an object or null");
    std::string type = string_field(s, "rope_type", string_field(s, "type"));
    if (type == "llama3") {
      c.rope_scaling_type = type;
      RIDGE_ASSIGN_OR_RETURN(c.rope_scaling_factor, config_number(s, "factor", 8.0));
      RIDGE_ASSIGN_OR_RETURN(c.low_freq_factor, config_number(s, "low_freq_factor", 1.0));
      RIDGE_ASSIGN_OR_RETURN(c.high_freq_factor, config_number(s, "high_freq_factor", 4.0));
      RIDGE_ASSIGN_OR_RETURN(c.rope_original_context, config_positive(s, "original_max_position_embeddings", 8192));
      if (c.rope_scaling_factor <= 0.0 || c.low_freq_factor <= 0.0 || c.high_freq_factor <= c.low_freq_factor) {
        return error("config.json: rope_scaling llama3 needs factor > 0 and high_freq_factor > low_freq_factor > 0");
      }
    } else if (type == "linear" || type == "yarn") {
      c.rope_scaling_type = type;
      RIDGE_ASSIGN_OR_RETURN(c.rope_scaling_factor, config_number(s, "factor", 0.0));
      if (c.rope_scaling_factor <= 0.0) return error("config.json: rope_scaling needs a positive 'factor'");
      RIDGE_ASSIGN_OR_RETURN(c.rope_original_context, config_positive(s, "original_max_position_embeddings", c.n_ctx));
      if (type == "yarn") {  // written when given, as llama.cpp's converter does
        RIDGE_ASSIGN_OR_RETURN(c.yarn_beta_fast, config_number(s, "beta_fast", 0.0));
        RIDGE_ASSIGN_OR_RETURN(c.yarn_beta_slow, config_number(s, "beta_slow", 0.0));
      }
    } else if (type != "default" && !type.empty()) {
      return error("config.json: rope_scaling '{}' is not one convert knows (linear, yarn, llama3)", type);
    }
  }
  if (is_gpt_oss(c)) RIDGE_RETURN_IF_ERROR(parse_gpt_oss(j, c));
  return c;
}

}  // namespace

Result<std::string> gguf_tensor_name(const HfConfig& cfg, const std::string& hf_name) {
  if (is_qwen35(cfg)) return qwen35_tensor_name(cfg, hf_name);
  if (is_gemma4(cfg)) {
    if (const std::optional<std::string> n = gemma4_tensor_name(cfg, hf_name)) return *n;
    return error("tensor '{}' is not one a {} checkpoint holds", hf_name, cfg.hf_architecture);
  }
  std::string hf = hf_name;
  if (is_gemma(cfg)) {
    const std::optional<std::string> text = gemma_text_name(hf_name);
    if (!text) return error("tensor '{}' is not the language model's", hf_name);
    hf = *text;
  }
  if (hf == "model.embed_tokens.weight") return std::string("token_embd.weight");
  if (hf == "model.norm.weight") return std::string("output_norm.weight");
  if (hf == "lm_head.weight") return std::string("output.weight");
  static const std::regex layer(R"(model\.layers\.(\d+)\.(.+))");
  std::smatch m;
  if (std::regex_match(hf, m, layer)) {
    const std::string rest = m[2].str();
    static const std::pair<const char*, const char*> kLayer[] = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"self_attn.q_proj.bias", "attn_q.bias"},
        {"self_attn.k_proj.bias", "attn_k.bias"},
        {"self_attn.v_proj.bias", "attn_v.bias"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"},
        {"self_attn.k_norm.weight", "attn_k_norm.weight"},
        {"post_attention_layernorm.weight", "ffn_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"},
    };
    static const std::pair<const char*, const char*> kMoe[] = {
        {"mlp.gate.weight", "ffn_gate_inp.weight"},  // the router
        {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
        {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
        {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
        {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
    };
    const int64_t il = std::stoll(m[1].str());
    if (is_gemma(cfg) && il < cfg.n_layer) {
      if (const std::optional<std::string> g = gemma_layer_tensor(rest)) return "blk." + m[1].str() + "." + *g;
    }
    const bool moe = cfg.n_expert > 0, shared = cfg.n_ff_shexp > 0;
    for (const auto& [from, to] : kLayer) {
      // A mixture's layers have no dense FFN.
      if (rest == from && il < cfg.n_layer && !(moe && rest.starts_with("mlp."))) return "blk." + m[1].str() + "." + to;
    }
    for (const auto& [from, to] : kMoe) {
      const bool is_shared = rest.starts_with("mlp.shared_expert");
      if (rest == from && il < cfg.n_layer && moe && (shared || !is_shared)) return "blk." + m[1].str() + "." + to;
    }
  }
  return error("tensor '{}' is not one a {} checkpoint holds", hf_name, cfg.hf_architecture);
}

std::vector<float> llama3_rope_factors(const HfConfig& c) {
  std::vector<float> f(static_cast<size_t>(c.head_dim / 2));
  for (size_t i = 0; i < f.size(); ++i) {
    f[i] = static_cast<float>(llama3_rope_factor(c.rope_theta, c.head_dim, static_cast<int64_t>(i),
                                                 static_cast<float>(c.rope_scaling_factor),
                                                 static_cast<float>(c.low_freq_factor),
                                                 static_cast<float>(c.high_freq_factor), c.rope_original_context));
  }
  return f;
}

std::vector<uint8_t> permute_rope_rows(std::span<const uint8_t> data, int64_t n_head, int64_t head_dim,
                                       int64_t row_bytes) {
  std::vector<uint8_t> out(data.size());
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t j = 0; j < 2; ++j) {
      for (int64_t i = 0; i < half; ++i) {
        const int64_t from = h * head_dim + j * half + i, to = h * head_dim + 2 * i + j;
        std::memcpy(out.data() + to * row_bytes, data.data() + from * row_bytes, static_cast<size_t>(row_bytes));
      }
    }
  }
  return out;
}

Status convert_checkpoint(const HfConfig& c, const SafetensorsSet& set, gguf::Writer& w) {
  const std::string& a = c.gguf_arch;
  auto u32 = [](int64_t v) { return gguf::make_u32(static_cast<uint32_t>(v)); };
  w.set("general.architecture", gguf::make_string(a));
  w.set("general.name", gguf::make_string(c.hf_architecture));
  w.set(a + ".context_length", u32(c.n_ctx));
  w.set(a + ".embedding_length", u32(c.n_embd));
  w.set(a + ".block_count", u32(c.n_layer));
  if (c.n_ff > 0) w.set(a + ".feed_forward_length", u32(c.n_ff));
  w.set(a + ".attention.head_count", u32(c.n_head));
  w.set(a + ".attention.head_count_kv", u32(c.n_head_kv));
  w.set(a + ".attention.key_length", u32(c.head_dim));
  w.set(a + ".attention.value_length", u32(c.head_dim));
  w.set(a + ".attention.layer_norm_rms_epsilon", gguf::make_f32(static_cast<float>(c.rms_eps)));
  w.set(a + ".rope.freq_base", gguf::make_f32(static_cast<float>(c.rope_theta)));
  w.set(a + ".rope.dimension_count", u32(c.head_dim));
  w.set(a + ".vocab_size", u32(c.n_vocab));
  if (is_gemma(c)) add_gemma_metadata(c, w);
  if (c.n_expert > 0) {
    w.set(a + ".expert_count", u32(c.n_expert));
    w.set(a + ".expert_used_count", u32(c.n_expert_used));
    w.set(a + ".expert_feed_forward_length", u32(c.n_ff_exp));
    if (c.n_ff_shexp > 0) w.set(a + ".expert_shared_feed_forward_length", u32(c.n_ff_shexp));
  }
  if (c.rope_scaling_type == "llama3") {  // as llama.cpp's converter: a tensor, no metadata
    const std::vector<float> factors = llama3_rope_factors(c);
    RIDGE_RETURN_IF_ERROR(w.add_tensor_data(
        "rope_freqs.weight", GgmlType::kF32, {factors.size()},
        std::span(reinterpret_cast<const uint8_t*>(factors.data()), factors.size() * sizeof(float))));
  } else if (!c.rope_scaling_type.empty()) {
    w.set(a + ".rope.scaling.type", gguf::make_string(c.rope_scaling_type));
    w.set(a + ".rope.scaling.factor", gguf::make_f32(static_cast<float>(c.rope_scaling_factor)));
    w.set(a + ".rope.scaling.original_context_length", u32(c.rope_original_context));
    if (c.yarn_beta_fast > 0.0) w.set(a + ".rope.scaling.yarn_beta_fast", gguf::make_f32(static_cast<float>(c.yarn_beta_fast)));
    if (c.yarn_beta_slow > 0.0) w.set(a + ".rope.scaling.yarn_beta_slow", gguf::make_f32(static_cast<float>(c.yarn_beta_slow)));
  }
  if (is_qwen35(c)) return convert_qwen35(c, set, w);  // its own tensors and transformations
  if (is_gemma4(c)) return convert_gemma4(c, set, w);  // its per-layer metadata, rope_freqs, tensors
  if (is_gpt_oss(c)) {  // its MXFP4 experts, sinks, biases
    w.set(a + ".attention.sliding_window", u32(c.n_swa));
    return convert_gpt_oss(c, set, w);
  }
  const bool permute = a == "llama";  // llama.cpp rotates adjacent pairs for llama, halves (NeoX) for qwen
  bool has_output = false, has_embd = false;
  ExpertStacks experts;
  for (const Tensor* t : set.tensors()) {
    if (ignored(t->name)) continue;
    if (is_gemma(c) && !gemma_text_name(t->name)) continue;  // a multimodal checkpoint's vision tower
    if (t->name.ends_with("lm_head.weight") && c.tied_embeddings) continue;  // the embedding's copy
    if (const std::optional<ExpertMatrix> e = expert_matrix(t->name)) {
      RIDGE_RETURN_IF_ERROR(experts.add(c, *e, t));
      continue;
    }
    RIDGE_ASSIGN_OR_RETURN(const std::string name, gguf_tensor_name(c, t->name));
    RIDGE_ASSIGN_OR_RETURN(const GgmlType type, gguf_type_of(*t));
    if (t->shape.empty() || t->shape.size() > 2) {
      return error("tensor '{}': {} dimensions (convert reads matrices and vectors)", t->name, t->shape.size());
    }
    has_output |= name == "output.weight";
    has_embd |= name == "token_embd.weight";
    std::vector<uint64_t> shape(t->shape.rbegin(), t->shape.rend());  // ggml's order: innermost first
    // The shared expert's gate is one row ([1, n_embd]); llama.cpp reads it as a vector.
    if (name.ends_with("ffn_gate_inp_shexp.weight") && shape.size() == 2 && shape[1] == 1) shape.pop_back();
    const bool is_q = name.ends_with("attn_q.weight") || name.ends_with("attn_q.bias");
    const bool is_k = name.ends_with("attn_k.weight") || name.ends_with("attn_k.bias");
    const Tensor* src = t;
    if (is_gemma(c) && name.ends_with("norm.weight")) {  // stored as 1 + w
      RIDGE_ASSIGN_OR_RETURN(const std::vector<float> shifted, gemma_shifted_norm(*t));
      RIDGE_RETURN_IF_ERROR(w.add_tensor_data(
          name, GgmlType::kF32, shape,
          std::span(reinterpret_cast<const uint8_t*>(shifted.data()), shifted.size() * sizeof(float))));
    } else if (permute && (is_q || is_k)) {
      const int64_t heads = is_q ? c.n_head : c.n_head_kv;
      if (t->shape[0] != heads * c.head_dim || c.head_dim % 2 != 0) {
        return error("tensor '{}': {} rows, expected {} heads of {}", t->name, t->shape[0], heads, c.head_dim);
      }
      const int64_t row_bytes = static_cast<int64_t>(t->data.size()) / t->shape[0];
      RIDGE_RETURN_IF_ERROR(w.add_tensor(name, type, shape, [src, heads, c, row_bytes](std::span<uint8_t> dst) {
        const std::vector<uint8_t> p = permute_rope_rows(src->data, heads, c.head_dim, row_bytes);
        std::memcpy(dst.data(), p.data(), dst.size());
        return Status();
      }));
    } else {
      RIDGE_RETURN_IF_ERROR(w.add_tensor(name, type, shape, [src](std::span<uint8_t> dst) {
        std::memcpy(dst.data(), src->data.data(), dst.size());
        return Status();
      }));
    }
  }
  if (c.n_expert > 0) RIDGE_RETURN_IF_ERROR(experts.write(c, w));
  if (!has_embd) return error("the checkpoint has no model.embed_tokens.weight");
  if (!has_output && !c.tied_embeddings) {
    return error("the checkpoint has no lm_head.weight and config.json does not tie it to the embeddings");
  }
  return Status();
}

}  // namespace ridge::checkpoint
