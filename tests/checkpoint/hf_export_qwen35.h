// Test-side writer of Qwen3.5 checkpoints (hf_export.h's write_checkpoint for qwen35 and
// qwen35moe): Hugging Face's names and config.json fields for the Gated DeltaNet model, and the
// forms its tensors have there, typed from transformers' Qwen3.5 layout as llama.cpp's converter
// (conversion/qwen.py) reads it, not from ridge's converter:
//  - the text model under "model.language_model." beside a vision tower (the multimodal
//    Qwen3_5ForConditionalGeneration of the hub), or flat (Qwen3_5ForCausalLM);
//  - A_log = log(-a) for GGUF's ssm_a, every RMSNorm weight but the gated one stored minus one,
//    conv1d as [conv_dim, 1, K], the shared expert's gate as a [1, n_embd] Linear;
//  - value heads grouped by key head (Hugging Face's v-head j belongs to k-head j / (Hv/Hk)),
//    where GGUF tiles them (v-head g reads k-head g % Hk);
//  - MTP blocks under mtp.*; experts one matrix each or stacked (gate_up_proj, down_proj).
#pragma once

#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/hf_qwen35.h"
#include "gguf/reader.h"
#include "model/config.h"
#include "tensor/fp16.h"

namespace ridge::checkpoint::testing {

struct ExportOptions {
  bool text_only = false;       // Qwen3.5: Qwen3_5(Moe)ForCausalLM, no vision tower
  bool fused_experts = false;   // Qwen3.5-MoE: gate_up_proj / down_proj stacks, not one per expert
  bool narrow_vectors = false;  // Qwen3.5: F32 vectors, norms, conv taps and routers in the model's type
  std::string drop;             // a Hugging Face tensor to leave out
};

// One tensor as Hugging Face keeps it: name, shape (outermost first), dtype, bytes.
struct HfPiece {
  std::string name;
  std::vector<int64_t> shape;
  GgmlType type;
  std::vector<uint8_t> data;
};

inline bool is_qwen35_arch(const std::string& arch) { return arch == "qwen35" || arch == "qwen35moe"; }

// A_log as a checkpoint holds it for GGUF's a = -exp(A_log), and the a llama.cpp's converter
// gives back (torch's exp: torch_expf, checked against PyTorch's own values in convert_test).
inline float a_log_of(float a) { return static_cast<float>(std::log(-static_cast<double>(a))); }
inline float a_of(float a_log) { return -torch_expf(a_log); }

// Rewrites an in-memory GGUF image's ssm_a values to ones a checkpoint gives back exactly: not
// every float is -exp of a float, so a synthetic model's a is moved to the nearest such value
// (the fixed point of a -> a_of(a_log_of(a))).
inline void snap_ssm_a(std::span<uint8_t> image, const gguf::File& f) {
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (!t.name.ends_with(".ssm_a") || t.type != GgmlType::kF32) continue;
    uint8_t* p = image.data() + (t.data - image.data());
    for (uint64_t i = 0; i < t.n_elements; ++i) {
      float a;
      std::memcpy(&a, p + 4 * i, 4);
      for (int k = 0; k < 16 && a_of(a_log_of(a)) != a; ++k) a = a_of(a_log_of(a));
      std::memcpy(p + 4 * i, &a, 4);
    }
  }
}

inline nlohmann::json qwen35_config(nlohmann::json text, const gguf::File& f, const model::ModelConfig& cfg,
                                    const ExportOptions& opt) {
  using json = nlohmann::json;
  const bool moe = cfg.arch == "qwen35moe";
  json types = json::array();
  for (int64_t il = 0; il < cfg.n_layer; ++il) {
    types.push_back((il + 1) % cfg.full_attn_interval == 0 ? "full_attention" : "linear_attention");
  }
  text["layer_types"] = types;
  text["full_attention_interval"] = cfg.full_attn_interval;
  text["linear_conv_kernel_dim"] = cfg.ssm_conv_kernel;
  text["linear_key_head_dim"] = cfg.ssm_head_dim;
  text["linear_value_head_dim"] = cfg.ssm_head_dim;
  text["linear_num_key_heads"] = cfg.ssm_n_k_heads;
  text["linear_num_value_heads"] = cfg.ssm_n_v_heads;
  text["attn_output_gate"] = true;
  text["mtp_num_hidden_layers"] = cfg.n_nextn_layers;
  text["mtp_use_dedicated_embeddings"] = false;
  const auto sec = f.get_int_array(cfg.arch + ".rope.dimension_sections");
  EXPECT_TRUE(sec.ok());
  text["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", cfg.rope_theta},
                             {"partial_rotary_factor", static_cast<double>(cfg.rope_dims) / static_cast<double>(cfg.head_dim)},
                             {"mrope_section", {(*sec)[0], (*sec)[1], (*sec)[2]}}, {"mrope_interleaved", true}};
  text.erase("rope_theta");
  text.erase("rope_scaling");
  text["model_type"] = moe ? "qwen3_5_moe_text" : "qwen3_5_text";
  const char* name = moe ? "Qwen3_5Moe" : "Qwen3_5";
  if (opt.text_only) {
    text["architectures"] = {std::string(name) + "ForCausalLM"};
    return text;
  }
  json top = {{"architectures", {std::string(name) + "ForConditionalGeneration"}},
              {"model_type", moe ? "qwen3_5_moe" : "qwen3_5"},
              {"tie_word_embeddings", text["tie_word_embeddings"]},  // only here
              {"vision_config", {{"depth", 1}, {"hidden_size", 16}}}};
  text.erase("architectures");
  text.erase("tie_word_embeddings");
  top["text_config"] = text;
  return top;
}

// Moves value heads from GGUF's tiled order to Hugging Face's grouped one: `rows` x `cols`
// elements of `eb` bytes, the heads `unit` rows each from row `first` on (or, columns, `unit`
// columns each in every row).
inline std::vector<uint8_t> to_grouped_heads(const std::vector<uint8_t>& d, const model::ModelConfig& cfg, int64_t rows,
                                             size_t eb, int64_t first, int64_t unit, bool columns) {
  std::vector<uint8_t> out = d;
  const int64_t hk = cfg.ssm_n_k_heads, hv = cfg.ssm_n_v_heads, r = hv / hk;
  const size_t row = d.size() / static_cast<size_t>(rows), head = static_cast<size_t>(unit) * (columns ? eb : row);
  for (int64_t rr = 0; rr < (columns ? rows : 1); ++rr) {
    const size_t base = columns ? static_cast<size_t>(rr) * row : static_cast<size_t>(first) * row;
    for (int64_t j = 0; j < hv; ++j) {  // Hugging Face's head j: k-head j / r, its (j % r)-th
      const int64_t g = (j % r) * hk + j / r;
      std::memcpy(out.data() + base + static_cast<size_t>(j) * head, d.data() + base + static_cast<size_t>(g) * head, head);
    }
  }
  return out;
}

// GGUF F32 values in a 16-bit type (a checkpoint's vectors as bf16 or f16).
inline std::vector<uint8_t> narrowed(const std::vector<uint8_t>& d, GgmlType type) {
  std::vector<uint8_t> out(d.size() / 2);
  for (size_t i = 0; i < d.size() / 4; ++i) {
    float v;
    std::memcpy(&v, d.data() + 4 * i, 4);
    const uint16_t h = type == GgmlType::kF16 ? f32_to_fp16(v) : f32_to_bf16(v);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

// What a Qwen3.5 checkpoint keeps of GGUF tensor t (data: its bytes).
inline std::vector<HfPiece> qwen35_pieces(const gguf::File& f, const gguf::TensorInfo& t, const model::ModelConfig& cfg,
                                          const ExportOptions& opt) {
  static const std::map<std::string, std::string> names = {
      {"attn_norm.weight", "input_layernorm.weight"}, {"post_attention_norm.weight", "post_attention_layernorm.weight"},
      {"attn_qkv.weight", "linear_attn.in_proj_qkv.weight"}, {"attn_gate.weight", "linear_attn.in_proj_z.weight"},
      {"ssm_beta.weight", "linear_attn.in_proj_b.weight"}, {"ssm_alpha.weight", "linear_attn.in_proj_a.weight"},
      {"ssm_conv1d.weight", "linear_attn.conv1d.weight"}, {"ssm_dt.bias", "linear_attn.dt_bias"},
      {"ssm_a", "linear_attn.A_log"}, {"ssm_norm.weight", "linear_attn.norm.weight"},
      {"ssm_out.weight", "linear_attn.out_proj.weight"}, {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"}, {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_q_norm.weight", "self_attn.q_norm.weight"},
      {"attn_k_norm.weight", "self_attn.k_norm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"}, {"ffn_down.weight", "mlp.down_proj.weight"},
      {"ffn_gate_inp.weight", "mlp.gate.weight"}, {"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight"},
      {"ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight"},
      {"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight"},
      {"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight"}};
  static const std::map<std::string, std::string> mtp_head = {
      {"nextn.eh_proj.weight", "mtp.fc.weight"}, {"nextn.enorm.weight", "mtp.pre_fc_norm_embedding.weight"},
      {"nextn.hnorm.weight", "mtp.pre_fc_norm_hidden.weight"}, {"nextn.shared_head_norm.weight", "mtp.norm.weight"}};
  const std::string text = opt.text_only ? "model." : "model.language_model.";
  std::vector<uint8_t> data(t.data, t.data + t.n_bytes);
  std::vector<int64_t> shape(t.shape.rbegin(), t.shape.rend());
  const size_t eb = t.type == GgmlType::kF32 ? 4 : 2;
  std::vector<HfPiece> out;
  std::string rest = t.name, name;
  int64_t layer = -1;
  if (t.name == "token_embd.weight") {
    name = text + "embed_tokens.weight";
    if (!opt.text_only) out.push_back({"model.visual.blocks.0.attn.qkv.weight", {4, 4}, GgmlType::kF32, std::vector<uint8_t>(64)});
  } else if (t.name == "output_norm.weight") {
    name = text + "norm.weight";
  } else if (t.name == "output.weight") {
    name = "lm_head.weight";
  } else {
    const size_t dot = t.name.find('.', 4);
    layer = std::stoll(t.name.substr(4, dot - 4));
    rest = t.name.substr(dot + 1);
    const std::string block = layer < cfg.n_layer ? text + "layers." + std::to_string(layer) + "."
                                                  : "mtp.layers." + std::to_string(layer - cfg.n_layer) + ".";
    if (mtp_head.contains(rest)) {
      name = mtp_head.at(rest);
    } else if (rest.ends_with("_exps.weight")) {  // stacked experts
      const std::string kind = rest.substr(4, rest.find("_exps") - 4);  // gate, up, down
      const size_t per = t.n_bytes / static_cast<size_t>(shape[0]);
      if (opt.fused_experts) {
        if (kind == "up") return out;  // with the gate's
        if (kind == "gate") {
          const gguf::TensorInfo* up = f.find_tensor("blk." + std::to_string(layer) + ".ffn_up_exps.weight");
          std::vector<uint8_t> both;
          for (int64_t e = 0; e < shape[0]; ++e) {
            both.insert(both.end(), t.data + e * per, t.data + (e + 1) * per);
            both.insert(both.end(), up->data + e * per, up->data + (e + 1) * per);
          }
          return {{block + "mlp.experts.gate_up_proj", {shape[0], 2 * shape[1], shape[2]}, t.type, both}};
        }
        return {{block + "mlp.experts.down_proj", shape, t.type, data}};
      }
      for (int64_t e = 0; e < shape[0]; ++e) {
        out.push_back({block + "mlp.experts." + std::to_string(e) + "." + kind + "_proj.weight", {shape[1], shape[2]},
                       t.type, std::vector<uint8_t>(data.begin() + e * per, data.begin() + (e + 1) * per)});
      }
      return out;
    } else {
      name = block + names.at(rest);
    }
  }
  const int64_t hd = cfg.ssm_head_dim, key = cfg.ssm_n_k_heads * hd, rows = shape[0];
  if (rest == "attn_qkv.weight" || rest == "ssm_conv1d.weight") data = to_grouped_heads(data, cfg, rows, eb, 2 * key, hd, false);
  if (rest == "attn_gate.weight") data = to_grouped_heads(data, cfg, rows, eb, 0, hd, false);
  if (rest == "ssm_beta.weight" || rest == "ssm_alpha.weight" || rest == "ssm_a" || rest == "ssm_dt.bias") {
    data = to_grouped_heads(data, cfg, rows, eb, 0, 1, false);
  }
  if (rest == "ssm_out.weight") data = to_grouped_heads(data, cfg, rows, eb, 0, hd, true);
  for (size_t i = 0; i + 4 <= data.size() && t.type == GgmlType::kF32; i += 4) {
    float v;
    std::memcpy(&v, data.data() + i, 4);
    if (rest == "ssm_a") v = a_log_of(v);
    if (rest.ends_with("norm.weight") && rest != "ssm_norm.weight") v -= 1.0f;  // Qwen3.5 multiplies by 1 + w
    std::memcpy(data.data() + i, &v, 4);
  }
  if (rest == "ssm_conv1d.weight") shape = {shape[0], 1, shape[1]};
  if (rest == "ffn_gate_inp_shexp.weight") shape = {1, shape[0]};
  GgmlType type = t.type;
  const GgmlType model_type = f.find_tensor("token_embd.weight")->type;
  if (opt.narrow_vectors && type == GgmlType::kF32 && model_type != GgmlType::kF32) {
    data = narrowed(data, model_type);
    type = model_type;
  }
  out.push_back({name, shape, type, data});
  return out;
}

}  // namespace ridge::checkpoint::testing
