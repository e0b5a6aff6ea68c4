#include "checkpoint/hf_gpt_oss.h"

#include <cstring>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "checkpoint/hf_convert.h"
#include "checkpoint/json_fields.h"
#include "tensor/fp16.h"

namespace ridge::checkpoint {
namespace {

using json = nlohmann::json;

// The MXFP4 block: 32 values, a scale byte and 16 bytes of nibbles.
constexpr int64_t kBlock = 32, kBlockBytes = 17;

// A tensor's values as F32 (F32, F16 or BF16), or an error naming it.
Status widen_f32(const Tensor& t, std::span<uint8_t> dst) {
  const size_t n = static_cast<size_t>(t.n_elements());
  if (dst.size() != n * 4) return error("tensor '{}': {} bytes for {} values", t.name, dst.size(), n);
  float* out = reinterpret_cast<float*>(dst.data());
  for (size_t i = 0; i < n; ++i) {
    if (t.dtype == Dtype::kF32) {
      std::memcpy(out + i, t.data.data() + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, t.data.data() + 2 * i, 2);
      out[i] = t.dtype == Dtype::kBF16 ? bf16_to_f32(h) : fp16_to_f32(h);
    }
  }
  return ok_status();
}

// What the layer-tensor names of a checkpoint are in GGUF, and whether llama.cpp writes them as
// F32 (vectors, norms, biases, sinks, the router).
struct Plain {
  const char* hf;
  const char* gguf;
  bool f32;
};
constexpr Plain kLayer[] = {
    {"input_layernorm.weight", "attn_norm.weight", true},
    {"post_attention_layernorm.weight", "post_attention_norm.weight", true},
    {"self_attn.q_proj.weight", "attn_q.weight", false},
    {"self_attn.k_proj.weight", "attn_k.weight", false},
    {"self_attn.v_proj.weight", "attn_v.weight", false},
    {"self_attn.o_proj.weight", "attn_output.weight", false},
    {"self_attn.q_proj.bias", "attn_q.bias", true},
    {"self_attn.k_proj.bias", "attn_k.bias", true},
    {"self_attn.v_proj.bias", "attn_v.bias", true},
    {"self_attn.o_proj.bias", "attn_output.bias", true},
    {"self_attn.sinks", "attn_sinks.weight", true},
    {"mlp.router.weight", "ffn_gate_inp.weight", true},
    {"mlp.router.bias", "ffn_gate_inp.bias", true},
    {"mlp.experts.down_proj_bias", "ffn_down_exps.bias", true},
};

Status expect_shape(const Tensor& t, std::vector<int64_t> want) {
  if (t.shape != want) {
    std::string w, g;
    for (int64_t v : want) w += (w.empty() ? "" : ", ") + std::to_string(v);
    for (int64_t v : t.shape) g += (g.empty() ? "" : ", ") + std::to_string(v);
    return error("tensor '{}': shape [{}], expected [{}]", t.name, g, w);
  }
  return ok_status();
}

// The rows `first`, first + step, ... of each expert's [rows, cols] matrix ([n_expert, rows, cols]
// row-major, `row_bytes` a row) as [n_expert, rows / step, cols].
void take_rows(std::span<const uint8_t> src, int64_t n_expert, int64_t rows, size_t row_bytes, int64_t first,
               int64_t step, std::span<uint8_t> dst) {
  const int64_t out_rows = rows / step;
  for (int64_t e = 0; e < n_expert; ++e) {
    for (int64_t r = 0; r < out_rows; ++r) {
      std::memcpy(dst.data() + (e * out_rows + r) * row_bytes, src.data() + (e * rows + first + r * step) * row_bytes,
                  row_bytes);
    }
  }
}

}  // namespace

bool is_gpt_oss(const HfConfig& c) { return c.gguf_arch == "gpt-oss"; }

void mxfp4_block_from_openai(uint8_t scale, const uint8_t* in, uint8_t* out) {
  out[0] = scale;
  auto nib = [in](int x) { return static_cast<uint8_t>((in[x / 2] >> (4 * (x & 1))) & 0x0F); };
  for (int k = 0; k < 16; ++k) out[1 + k] = static_cast<uint8_t>(nib(k) | nib(k + 16) << 4);
}

Status parse_gpt_oss(const json& j, HfConfig& c) {
  RIDGE_ASSIGN_OR_RETURN(c.n_expert, config_positive(j, "num_local_experts"));
  RIDGE_ASSIGN_OR_RETURN(const int64_t per_token, config_positive(j, "experts_per_token", 0));
  RIDGE_ASSIGN_OR_RETURN(c.n_expert_used, config_positive(j, "num_experts_per_tok", per_token > 0 ? per_token : -1));
  if (per_token > 0 && per_token != c.n_expert_used) {
    return error("config.json: experts_per_token {} and num_experts_per_tok {} differ", per_token, c.n_expert_used);
  }
  if (c.n_expert < 2 || c.n_expert_used > c.n_expert) {
    return error("config.json: num_experts_per_tok {} of num_local_experts {}", c.n_expert_used, c.n_expert);
  }
  c.n_ff_exp = c.n_ff;  // every expert intermediate_size wide
  if (c.n_embd % kBlock != 0 || c.n_ff_exp % kBlock != 0) {
    return error("config.json: hidden_size {} and intermediate_size {} must be multiples of 32 (MXFP4 blocks)",
                 c.n_embd, c.n_ff_exp);
  }
  RIDGE_ASSIGN_OR_RETURN(c.n_swa, config_positive(j, "sliding_window"));
  c.swa_period = 2;  // the runtime's gpt-oss: even layers windowed
  if (j.contains("layer_types") && !j["layer_types"].is_null()) {
    const json& types = j["layer_types"];
    if (!types.is_array() || static_cast<int64_t>(types.size()) != c.n_layer) {
      return error("config.json: 'layer_types' must list the {} layers", c.n_layer);
    }
    for (int64_t il = 0; il < c.n_layer; ++il) {
      const char* want = il % 2 == 0 ? "sliding_attention" : "full_attention";
      if (!types[static_cast<size_t>(il)].is_string() || types[static_cast<size_t>(il)].get<std::string>() != want) {
        return error("config.json: layer_types[{}] is not '{}' (gpt-oss windows the even layers; another pattern is "
                     "not supported)", il, want);
      }
    }
  }
  RIDGE_ASSIGN_OR_RETURN(const double limit, config_number(j, "swiglu_limit", 7.0));
  if (limit != 7.0) return error("config.json: swiglu_limit {} (ridge and llama.cpp clamp at 7)", limit);
  if (!bool_field(j, "attention_bias", true)) return error("config.json: attention_bias false is not gpt-oss's");
  if (c.rope_scaling_type != "yarn" && !c.rope_scaling_type.empty()) {
    return error("config.json: rope_scaling '{}' in a gpt-oss model (yarn or none)", c.rope_scaling_type);
  }
  return ok_status();
}

Status convert_gpt_oss(const HfConfig& c, const SafetensorsSet& set, gguf::Writer& w) {
  const int64_t d = c.n_embd, ff = c.n_ff_exp, ne = c.n_expert;
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  std::set<std::string> written;
  auto add = [&](const std::string& name, GgmlType type, std::vector<uint64_t> shape,
                 std::function<Status(std::span<uint8_t>)> fill) -> Status {
    if (!written.insert(name).second) return error("tensor '{}' is given twice", name);
    return w.add_tensor(name, type, std::move(shape), std::move(fill));
  };
  auto copy = [](const Tensor* t) {
    return [t](std::span<uint8_t> dst) {
      std::memcpy(dst.data(), t->data.data(), dst.size());
      return ok_status();
    };
  };
  auto f32_of = [](const Tensor* t) { return [t](std::span<uint8_t> dst) { return widen_f32(*t, dst); }; };
  // OpenAI's MXFP4 experts of one layer: each kind's blocks and scales.
  std::map<std::string, std::pair<const Tensor*, const Tensor*>> mxfp4;  // "blk.N.gate_up" -> blocks, scales
  static const std::regex layer_re(R"(model\.layers\.(\d+)\.(.+))");
  for (const Tensor* t : set.tensors()) {
    if (t->name.ends_with("rotary_emb.inv_freq")) continue;
    std::smatch m;
    const bool in_layer = std::regex_match(t->name, m, layer_re);
    const std::string rest = in_layer ? m[2].str() : "";
    const int64_t il = in_layer ? std::stoll(m[1].str()) : -1;
    const std::string blk = "blk." + std::to_string(il) + ".";
    if (in_layer && il >= c.n_layer) return error("tensor '{}': layer {} of {}", t->name, il, c.n_layer);
    if (in_layer && (rest.ends_with("_blocks") || rest.ends_with("_scales"))) {
      const bool blocks = rest.ends_with("_blocks");
      const std::string kind = rest.substr(0, rest.size() - 7);
      if (kind != "mlp.experts.gate_up_proj" && kind != "mlp.experts.down_proj") {
        return error("tensor '{}' is not one a GptOssForCausalLM checkpoint holds", t->name);
      }
      if (t->dtype != Dtype::kU8) return error("tensor '{}': dtype {} (MXFP4 parts are U8)", t->name, dtype_name(t->dtype));
      const bool gate_up = kind.ends_with("gate_up_proj");
      const int64_t rows = gate_up ? 2 * ff : d, nb = (gate_up ? d : ff) / kBlock;
      RIDGE_RETURN_IF_ERROR(blocks ? expect_shape(*t, {ne, rows, nb, 16}) : expect_shape(*t, {ne, rows, nb}));
      auto& slot = mxfp4[blk + (gate_up ? "gate_up" : "down")];
      (blocks ? slot.first : slot.second) = t;
      continue;
    }
    if (in_layer && (rest == "mlp.experts.gate_up_proj" || rest == "mlp.experts.down_proj")) {
      // Dequantized experts: [n_expert, in, out] (transposed), gate_up's columns interleaved.
      RIDGE_ASSIGN_OR_RETURN(const GgmlType type, gguf_type_of(*t));
      const bool gate_up = rest.ends_with("gate_up_proj");
      RIDGE_RETURN_IF_ERROR(expect_shape(*t, gate_up ? std::vector<int64_t>{ne, d, 2 * ff} : std::vector<int64_t>{ne, ff, d}));
      const size_t es = dtype_bytes(t->dtype);
      const int64_t in = gate_up ? d : ff, out = gate_up ? ff : d, step = gate_up ? 2 : 1;
      auto transpose = [t, ne, in, out, step, es](int64_t first) {
        return [=](std::span<uint8_t> dst) {
          for (int64_t e = 0; e < ne; ++e) {
            for (int64_t r = 0; r < out; ++r) {
              for (int64_t k = 0; k < in; ++k) {
                const int64_t from = (e * in + k) * out * step + first + r * step, to = (e * out + r) * in + k;
                std::memcpy(dst.data() + static_cast<size_t>(to) * es, t->data.data() + static_cast<size_t>(from) * es, es);
              }
            }
          }
          return ok_status();
        };
      };
      if (gate_up) {
        RIDGE_RETURN_IF_ERROR(add(blk + "ffn_gate_exps.weight", type, {u(d), u(ff), u(ne)}, transpose(0)));
        RIDGE_RETURN_IF_ERROR(add(blk + "ffn_up_exps.weight", type, {u(d), u(ff), u(ne)}, transpose(1)));
      } else {
        RIDGE_RETURN_IF_ERROR(add(blk + "ffn_down_exps.weight", type, {u(ff), u(d), u(ne)}, transpose(0)));
      }
      continue;
    }
    if (in_layer && rest == "mlp.experts.gate_up_proj_bias") {  // [n_expert, 2 n_ff], interleaved
      RIDGE_RETURN_IF_ERROR(gguf_type_of(*t).status());
      RIDGE_RETURN_IF_ERROR(expect_shape(*t, {ne, 2 * ff}));
      for (int64_t first = 0; first < 2; ++first) {
        RIDGE_RETURN_IF_ERROR(add(blk + (first == 0 ? "ffn_gate_exps.bias" : "ffn_up_exps.bias"), GgmlType::kF32,
                                  {u(ff), u(ne)}, [t, ne, ff, first](std::span<uint8_t> dst) {
                                    std::vector<uint8_t> wide(static_cast<size_t>(ne * 2 * ff) * 4);
                                    const Status widened = widen_f32(*t, wide);
                                    if (widened.ok()) take_rows(wide, ne, 2 * ff, 4, first, 2, dst);  // rows of one value
                                    return widened;
                                  }));
      }
      continue;
    }
    // Everything else: one tensor under its GGUF name.
    std::string name;
    bool f32 = false;
    if (t->name == "model.embed_tokens.weight") {
      name = "token_embd.weight";
    } else if (t->name == "lm_head.weight") {
      name = "output.weight";
    } else if (t->name == "model.norm.weight") {
      name = "output_norm.weight", f32 = true;
    } else if (in_layer) {
      for (const Plain& p : kLayer) {
        if (rest == p.hf) name = blk + p.gguf, f32 = p.f32;
      }
    }
    if (name.empty()) return error("tensor '{}' is not one a GptOssForCausalLM checkpoint holds", t->name);
    RIDGE_ASSIGN_OR_RETURN(const GgmlType own, gguf_type_of(*t));
    if (t->shape.empty() || t->shape.size() > 2) {
      return error("tensor '{}': {} dimensions (a matrix or a vector)", t->name, t->shape.size());
    }
    std::vector<uint64_t> shape(t->shape.rbegin(), t->shape.rend());
    std::function<Status(std::span<uint8_t>)> fill = copy(t);
    if (f32) fill = f32_of(t);
    RIDGE_RETURN_IF_ERROR(add(name, f32 ? GgmlType::kF32 : own, shape, std::move(fill)));
  }
  for (const auto& [key, parts] : mxfp4) {
    // Named copies, not structured bindings: lambdas below capture them (clang before 16 cannot
    // capture a binding).
    const auto blocks = parts.first;
    const auto scales = parts.second;
    const std::string blk = key.substr(0, key.rfind('.') + 1), hf = "model.layers." + key.substr(4, key.find('.', 4) - 4) +
                                                                     ".mlp.experts." + key.substr(key.rfind('.') + 1) + "_proj";
    if (blocks == nullptr || scales == nullptr) {
      return error("the checkpoint has no {}_{}", hf, blocks == nullptr ? "blocks" : "scales");
    }
    const bool gate_up = key.ends_with("gate_up");
    const int64_t rows = gate_up ? 2 * ff : d, cols = gate_up ? d : ff, nb = cols / kBlock;
    auto repack = [blocks, scales, ne, rows, nb](int64_t first, int64_t step) {
      return [=](std::span<uint8_t> dst) {
        const int64_t out_rows = rows / step;
        for (int64_t e = 0; e < ne; ++e) {
          for (int64_t r = 0; r < out_rows; ++r) {
            const int64_t src_row = e * rows + first + r * step;
            for (int64_t b = 0; b < nb; ++b) {
              mxfp4_block_from_openai(scales->data[static_cast<size_t>(src_row * nb + b)],
                                      blocks->data.data() + (src_row * nb + b) * 16,
                                      dst.data() + ((e * out_rows + r) * nb + b) * kBlockBytes);
            }
          }
        }
        return ok_status();
      };
    };
    const std::vector<uint64_t> shape = {u(cols), u(gate_up ? ff : d), u(ne)};
    if (gate_up) {
      RIDGE_RETURN_IF_ERROR(add(blk + "ffn_gate_exps.weight", GgmlType::kMXFP4, shape, repack(0, 2)));
      RIDGE_RETURN_IF_ERROR(add(blk + "ffn_up_exps.weight", GgmlType::kMXFP4, shape, repack(1, 2)));
    } else {
      RIDGE_RETURN_IF_ERROR(add(blk + "ffn_down_exps.weight", GgmlType::kMXFP4, shape, repack(0, 1)));
    }
  }
  // What the runtime reads of each layer, named as the checkpoint would name it.
  if (!written.contains("token_embd.weight")) return error("the checkpoint has no model.embed_tokens.weight");
  if (!written.contains("output_norm.weight")) return error("the checkpoint has no model.norm.weight");
  if (!written.contains("output.weight")) return error("the checkpoint has no lm_head.weight (gpt-oss does not tie it)");
  static const std::pair<const char*, const char*> kNeeded[] = {
      {"attn_norm.weight", "input_layernorm.weight"},      {"post_attention_norm.weight", "post_attention_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},        {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},        {"attn_output.weight", "self_attn.o_proj.weight"},
      {"attn_output.bias", "self_attn.o_proj.bias"},       {"attn_sinks.weight", "self_attn.sinks"},
      {"ffn_gate_inp.weight", "mlp.router.weight"},        {"ffn_gate_inp.bias", "mlp.router.bias"},
      {"ffn_gate_exps.weight", "mlp.experts.gate_up_proj_blocks"}, {"ffn_down_exps.weight", "mlp.experts.down_proj_blocks"},
      {"ffn_gate_exps.bias", "mlp.experts.gate_up_proj_bias"},     {"ffn_down_exps.bias", "mlp.experts.down_proj_bias"}};
  for (int64_t il = 0; il < c.n_layer; ++il) {
    for (const auto& [g, hf] : kNeeded) {
      if (!written.contains("blk." + std::to_string(il) + "." + g)) {
        return error("the checkpoint has no model.layers.{}.{}", il, hf);
      }
    }
  }
  return ok_status();
}

}  // namespace ridge::checkpoint
