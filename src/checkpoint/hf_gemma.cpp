#include "checkpoint/hf_gemma.h"

#include <cstring>

#include "checkpoint/hf_convert.h"
#include "checkpoint/json_fields.h"
#include "tensor/fp16.h"

namespace ridge::checkpoint {
namespace {

using json = nlohmann::json;


}  // namespace

bool is_gemma(const HfConfig& c) { return c.gguf_arch == "gemma2" || c.gguf_arch == "gemma3"; }

Status parse_gemma(const json& j, HfConfig& c) {
  const bool g3 = c.gguf_arch == "gemma3";
  RIDGE_ASSIGN_OR_RETURN(const double window, config_number(j, "sliding_window", g3 ? 0.0 : 4096.0));
  if (window < 0 || window > (1 << 26) || window != static_cast<double>(static_cast<int64_t>(window))) {
    return error("config.json: 'sliding_window' {} is not a window", window);
  }
  c.n_swa = static_cast<int64_t>(window);
  if (g3) {
    RIDGE_ASSIGN_OR_RETURN(const double period, config_number(j, "sliding_window_pattern", 6.0));
    if (period < 1 || period > 4096 || period != static_cast<double>(static_cast<int64_t>(period))) {
      return error("config.json: 'sliding_window_pattern' {} is not a layer period", period);
    }
    c.swa_period = static_cast<int64_t>(period);
    // Newer files list each layer's kind; ridge and llama.cpp compute the periodic pattern.
    if (j.contains("layer_types") && j["layer_types"].is_array()) {
      const json& types = j["layer_types"];
      for (size_t il = 0; il < types.size(); ++il) {
        const bool sliding = types[il] == "sliding_attention";
        const bool want = (static_cast<int64_t>(il) + 1) % c.swa_period != 0;
        if (sliding != want) {
          return error("config.json: layer_types[{}] is '{}', not the period of {} layers ridge computes", il,
                       types[il].is_string() ? types[il].get<std::string>() : "?", c.swa_period);
        }
      }
    }
    RIDGE_ASSIGN_OR_RETURN(c.rope_theta_swa, config_number(j, "rope_local_base_freq", 10000.0));
  }
  RIDGE_ASSIGN_OR_RETURN(c.final_softcap, config_number(j, "final_logit_softcapping", 0.0));
  RIDGE_ASSIGN_OR_RETURN(c.attn_softcap, config_number(j, "attn_logit_softcapping", 0.0));
  if (g3 && c.attn_softcap != 0.0) return error("config.json: attention soft-capping in a Gemma 3 model");
  // The q·k scale: 1/sqrt(query_pre_attn_scalar). ridge (as llama.cpp) takes head_dim, or
  // n_embd / n_head for the 27B models (known by their layer count): a file that says otherwise
  // would run with the wrong scale.
  const bool big = (g3 && c.n_layer == 62) || (!g3 && c.n_layer == 46);
  const double want = big ? static_cast<double>(c.n_embd) / static_cast<double>(c.n_head) : static_cast<double>(c.head_dim);
  RIDGE_ASSIGN_OR_RETURN(const double scalar, config_number(j, "query_pre_attn_scalar", want));
  if (scalar != want) {
    return error("config.json: query_pre_attn_scalar {} (a {}-layer {} scales queries by 1/sqrt({}))", scalar,
                 c.n_layer, c.gguf_arch, want);
  }
  return ok_status();
}

void add_gemma_metadata(const HfConfig& c, gguf::Writer& w) {
  const std::string& a = c.gguf_arch;
  if (c.n_swa > 0) w.set(a + ".attention.sliding_window", gguf::make_u32(static_cast<uint32_t>(c.n_swa)));
  if (a == "gemma3") {
    w.set(a + ".attention.sliding_window_pattern", gguf::make_u32(static_cast<uint32_t>(c.swa_period)));
    w.set(a + ".rope.freq_base_swa", gguf::make_f32(static_cast<float>(c.rope_theta_swa)));
  }
  if (c.final_softcap > 0) w.set(a + ".final_logit_softcapping", gguf::make_f32(static_cast<float>(c.final_softcap)));
  if (c.attn_softcap > 0) w.set(a + ".attn_logit_softcapping", gguf::make_f32(static_cast<float>(c.attn_softcap)));
}

std::optional<std::string> gemma_text_name(const std::string& n) {
  for (const char* skip : {"vision_tower.", "multi_modal_projector.", "model.vision_tower.",
                           "model.multi_modal_projector."}) {
    if (n.starts_with(skip)) return std::nullopt;
  }
  for (const char* prefix : {"language_model.model.", "model.language_model."}) {
    if (n.starts_with(prefix)) return "model." + n.substr(std::strlen(prefix));
  }
  if (n.starts_with("language_model.lm_head.")) return n.substr(std::strlen("language_model."));
  return n;
}

std::optional<std::string> gemma_layer_tensor(const std::string& rest) {
  if (rest == "post_attention_layernorm.weight") return std::string("post_attention_norm.weight");
  if (rest == "pre_feedforward_layernorm.weight") return std::string("ffn_norm.weight");
  if (rest == "post_feedforward_layernorm.weight") return std::string("post_ffw_norm.weight");
  return std::nullopt;
}

Result<std::vector<float>> gemma_shifted_norm(const Tensor& t) {
  const auto n = static_cast<size_t>(t.n_elements());
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case Dtype::kF32: {
        float v;
        std::memcpy(&v, t.data.data() + 4 * i, 4);
        out[i] = v + 1.0f;
        break;
      }
      case Dtype::kF16: {
        uint16_t h;
        std::memcpy(&h, t.data.data() + 2 * i, 2);
        out[i] = fp16_to_f32(f32_to_fp16(fp16_to_f32(h) + 1.0f));
        break;
      }
      case Dtype::kBF16: {
        uint16_t h;
        std::memcpy(&h, t.data.data() + 2 * i, 2);
        out[i] = bf16_to_f32(f32_to_bf16(bf16_to_f32(h) + 1.0f));
        break;
      }
      default: return error("tensor '{}': dtype {} (convert reads F32, F16 and BF16)", t.name, dtype_name(t.dtype));
    }
  }
  return out;
}

}  // namespace ridge::checkpoint
