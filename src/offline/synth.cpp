#include "offline/synth.h"
#include "offline/synth_internal.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/llama3_rope.h"
#include "base/thread_pool.h"
#include "gguf/reader.h"
#include "kernels/quant/quants.h"
#include "tensor/fp16.h"
#include "tensor/fp16_row.h"
#include "offline/quant_mix.h"
#include "offline/synth_vocab.h"
#include "model/weights.h"
#include "tokenizer/gguf_vocab.h"

namespace ridge::offline {

using model::Pooling;
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}


// One row of deterministic pseudo-random values (uniform, so cheap; the variance is what matters).
void fill_row(uint64_t seed, uint64_t tensor_hash, uint64_t row, Init init, float* out, int64_t n) {
  uint64_t s = splitmix64(seed ^ tensor_hash ^ splitmix64(row + 0x51ed27ull));
  const float half_width = init.stddev * 1.7320508f;  // uniform[-a, a] has stddev a / sqrt(3)
  for (int64_t i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const float u = static_cast<float>(s >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    out[i] = init.center + (2.0f * u - 1.0f) * half_width;
  }
}

Status encode_row(GgmlType type, const float* src, uint8_t* dst, int64_t n) {
  switch (type) {
    case GgmlType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return ok_status();
    case GgmlType::kF16: f32_to_fp16_row(src, dst, n); return ok_status();
    case GgmlType::kBF16: {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return ok_status();
    }
    default:
      if (!kernels::can_quantize(type)) return error("cannot write tensors of type {}", ggml_type_name(type));
      kernels::quantize_row(type, src, dst, n);
      return ok_status();
  }
}

}  // namespace

// Adds one tensor [cols, rows] (ggml order; [cols, rows, planes] with planes > 1, e.g. stacked
// experts) whose rows are generated in parallel at write time.
Status add_random(gguf::Writer& w, const std::string& name, GgmlType type, int64_t cols, int64_t rows, Init init,
                  const SynthOptions& opt, int64_t planes) {
  std::vector<uint64_t> shape = {static_cast<uint64_t>(cols)};
  if (rows > 1 || planes > 1) shape.push_back(static_cast<uint64_t>(rows));
  if (planes > 1) shape.push_back(static_cast<uint64_t>(planes));
  rows *= planes;
  auto row_bytes = ggml_row_bytes(type, static_cast<uint64_t>(cols));
  if (!row_bytes) return error("tensor '{}': {} columns do not fit type {}", name, cols, ggml_type_name(type));
  const uint64_t rb = *row_bytes;
  const uint64_t seed = opt.seed;
  const int n_threads = std::max(1, opt.n_threads);
  return w.add_tensor(name, type, std::move(shape), [=](std::span<uint8_t> dst) -> Status {
    const uint64_t th = hash_name(name);
    std::vector<Status> results(static_cast<size_t>(n_threads));
    auto work = [&](int ith) {
      std::vector<float> buf(static_cast<size_t>(cols));
      for (int64_t r = ith; r < rows; r += n_threads) {
        fill_row(seed, th, static_cast<uint64_t>(r), init, buf.data(), cols);
        Status s = encode_row(type, buf.data(), dst.data() + static_cast<uint64_t>(r) * rb, cols);
        if (!s.ok()) {
          results[static_cast<size_t>(ith)] = s;
          return;
        }
      }
    };
    run_on_threads(n_threads, work);
    for (auto& s : results) RIDGE_RETURN_IF_ERROR(s);
    return ok_status();
  });
}

// Llama 3 frequency factors (rope_freqs.weight): llama.cpp divides each rotary frequency by these.
std::vector<float> llama3_rope_factors(const ModelConfig& c) {
  const auto& s = c.rope_scaling;
  std::vector<float> f(static_cast<size_t>(c.rope_dims / 2));
  for (size_t i = 0; i < f.size(); ++i) {
    f[i] = static_cast<float>(llama3_rope_factor(static_cast<double>(c.rope_theta), c.rope_dims, static_cast<int64_t>(i),
                                                 s.factor, s.low_freq_factor, s.high_freq_factor, s.original_context));
  }
  return f;
}

Init linear_init(int64_t fan_in) { return Init{0.0f, 1.0f / std::sqrt(static_cast<float>(fan_in))}; }

namespace {

// One layer's mixture-of-experts FFN: the router (f32, as llama.cpp keeps it), the stacked
// experts, and a shared expert with its gate vector where the config has one.
template <typename AddMatrix>
Status add_experts(gguf::Writer& w, const ModelConfig& c, const std::string& p,
                   const SynthOptions& opt, const AddMatrix& add_matrix) {
  const int64_t d = c.n_embd, ff = c.n_ff_exp, n = c.n_expert;
  // A wider router spreads the routing over the experts, as a trained one does.
  RIDGE_RETURN_IF_ERROR(add_random(w, p + "ffn_gate_inp.weight", GgmlType::kF32, d, n,
                                   Init{0.0f, 2.0f / std::sqrt(static_cast<float>(d))}, opt));
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "ffn_gate_exps.weight", d, ff, linear_init(d), n));
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "ffn_up_exps.weight", d, ff, linear_init(d), n));
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "ffn_down_exps.weight", ff, d, linear_init(ff), n));
  if (c.moe_swiglu_oai) {  // gpt-oss: biased router and experts (f32, as llama.cpp keeps them)
    const Init bias{0.0f, 0.5f};
    const GgmlType f32 = GgmlType::kF32;
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "ffn_gate_inp.bias", f32, n, 1, bias, opt));
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "ffn_gate_exps.bias", f32, ff, n, bias, opt));
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "ffn_up_exps.bias", f32, ff, n, bias, opt));
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "ffn_down_exps.bias", f32, d, n, bias, opt));
  }
  if (c.n_ff_shexp > 0) {
    const int64_t sff = c.n_ff_shexp;
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "ffn_gate_inp_shexp.weight", GgmlType::kF32, d, 1,
                                     linear_init(d), opt));
    RIDGE_RETURN_IF_ERROR(add_matrix(p + "ffn_gate_shexp.weight", d, sff, linear_init(d), 1));
    RIDGE_RETURN_IF_ERROR(add_matrix(p + "ffn_up_shexp.weight", d, sff, linear_init(d), 1));
    RIDGE_RETURN_IF_ERROR(add_matrix(p + "ffn_down_shexp.weight", sff, d, linear_init(sff), 1));
  }
  return ok_status();
}

// One Gated DeltaNet layer's tensors (Qwen3.5): the in-projections, the conv taps, the decay
// parameters (A = -exp(A_log) < 0 and dt_bias, drawn so that heads forget over a few to a few
// dozen tokens), the output norm and projection.
template <typename AddMatrix>
Status add_linear_attention(gguf::Writer& w, const ModelConfig& c, const std::string& p,
                            const SynthOptions& opt, const AddMatrix& add_matrix) {
  const int64_t d = c.n_embd, hv = c.ssm_n_v_heads;
  const GgmlType f32 = GgmlType::kF32;
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "attn_qkv.weight", d, c.ssm_conv_dim(), linear_init(d), 1));
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "attn_gate.weight", d, c.ssm_value_dim(), linear_init(d), 1));
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "ssm_beta.weight", d, hv, linear_init(d), 1));
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "ssm_alpha.weight", d, hv, linear_init(d), 1));
  RIDGE_RETURN_IF_ERROR(add_random(w, p + "ssm_conv1d.weight", f32, c.ssm_conv_kernel, c.ssm_conv_dim(),
                                   Init{0.0f, 0.5f}, opt));
  RIDGE_RETURN_IF_ERROR(add_random(w, p + "ssm_dt.bias", f32, hv, 1, Init{-2.0f, 1.0f}, opt));
  RIDGE_RETURN_IF_ERROR(add_random(w, p + "ssm_a", f32, hv, 1, Init{-3.0f, 1.5f}, opt));
  RIDGE_RETURN_IF_ERROR(add_random(w, p + "ssm_norm.weight", f32, c.ssm_head_dim, 1, Init{1.0f, 0.1f}, opt));
  return add_matrix(p + "ssm_out.weight", c.ssm_value_dim(), d, linear_init(c.ssm_value_dim()), 1);
}

// One attention layer's tensors: projections (a gated layer's attn_q holds q and its gate),
// biases, Q/K norms, output; gpt-oss's output bias and sinks.
template <typename AddMatrix>
Status add_attention(gguf::Writer& w, const ModelConfig& c, const std::string& p,
                     const SynthOptions& opt, const AddMatrix& add_matrix) {
  const Init norm{1.0f, 0.1f};
  auto lin = linear_init;
  const GgmlType f32 = GgmlType::kF32;
  const int64_t q_rows = c.attn_output_gate ? 2 * c.q_dim() : c.q_dim();
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "attn_q.weight", c.n_embd, q_rows, lin(c.n_embd)));
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "attn_k.weight", c.n_embd, c.kv_dim(), lin(c.n_embd)));
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "attn_v.weight", c.n_embd, c.kv_dim(), lin(c.n_embd)));
  if (c.qkv_bias) {
    const Init bias{0.0f, 0.5f};
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "attn_q.bias", f32, c.q_dim(), 1, bias, opt));
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "attn_k.bias", f32, c.kv_dim(), 1, bias, opt));
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "attn_v.bias", f32, c.kv_dim(), 1, bias, opt));
  }
  if (c.qk_norm) {
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "attn_q_norm.weight", f32, c.head_dim, 1, norm, opt));
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "attn_k_norm.weight", f32, c.head_dim, 1, norm, opt));
  }
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "attn_output.weight", c.q_dim(), c.n_embd, lin(c.q_dim())));
  if (c.attn_sinks) {  // gpt-oss: output bias, one sink logit per head, attn_post_norm
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "attn_output.bias", f32, c.n_embd, 1, Init{0.0f, 0.5f}, opt));
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "attn_sinks.weight", f32, c.n_head, 1, Init{1.0f, 1.0f}, opt));
  }
  return ok_status();
}

// Qwen3.5's rope sections for text: rope_dims / 2 pairs split over time, height and width as
// the converter's [11, 11, 10] splits 32, so that every pair takes the text position.
std::vector<int32_t> text_rope_sections(int64_t rope_dims) {
  const auto pairs = static_cast<int32_t>(rope_dims / 2);
  const int32_t t = (pairs + 2) / 3, h = (pairs - t + 1) / 2;
  return {t, h, pairs - t - h, 0};
}

}  // namespace

uint32_t file_type_of(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return 0;
    case GgmlType::kF16: return 1;
    case GgmlType::kQ4_0: return 2;
    case GgmlType::kQ4_1: return 3;
    case GgmlType::kQ8_0: return 7;
    case GgmlType::kQ5_0: return 8;
    case GgmlType::kQ5_1: return 9;
    case GgmlType::kQ2_K: return 10;
    case GgmlType::kQ3_K: return 12;  // Q3_K_M
    case GgmlType::kQ4_K: return 15;  // Q4_K_M
    case GgmlType::kQ5_K: return 17;  // Q5_K_M
    case GgmlType::kQ6_K: return 18;
    case GgmlType::kBF16: return 32;
    case GgmlType::kMXFP4: return 38;  // MXFP4_MOE
    case GgmlType::kIQ4_NL: return 25;
    case GgmlType::kIQ4_XS: return 30;
    // The grid and ternary formats: the file type llama.cpp's loader guesses for a file mostly
    // in that type (llama-model-loader.cpp).
    case GgmlType::kIQ2_XXS: return 19;
    case GgmlType::kIQ2_XS: return 20;
    case GgmlType::kIQ3_XXS: return 23;
    case GgmlType::kIQ1_S: return 24;
    case GgmlType::kIQ3_S: return 26;
    case GgmlType::kIQ2_S: return 28;
    case GgmlType::kIQ1_M: return 31;
    case GgmlType::kTQ1_0: return 36;
    case GgmlType::kTQ2_0: return 37;
    default: return 1024;  // LLAMA_FTYPE_GUESSED
  }
}

void write_config_metadata(const ModelConfig& c, gguf::Writer& w) {
  const std::string a = c.arch;
  auto u32 = [](int64_t x) { return gguf::make_u32(static_cast<uint32_t>(x)); };
  w.set("general.architecture", gguf::make_string(a));
  w.set("general.name", gguf::make_string(c.name));
  w.set(a + ".context_length", u32(c.n_ctx_train));
  w.set(a + ".embedding_length", u32(c.n_embd));
  w.set(a + ".block_count", u32(c.n_layer + c.n_nextn_layers));
  if (c.n_nextn_layers > 0) w.set(a + ".nextn_predict_layers", u32(c.n_nextn_layers));
  w.set(a + ".feed_forward_length", u32(c.n_ff));
  w.set(a + ".attention.head_count", u32(c.n_head));
  w.set(a + ".attention.head_count_kv", u32(c.n_head_kv));
  w.set(a + ".attention.key_length", u32(c.head_dim));
  w.set(a + ".attention.value_length", u32(c.head_dim));
  w.set(a + ".attention.layer_norm_rms_epsilon", gguf::make_f32(c.rms_eps));
  w.set(a + ".rope.freq_base", gguf::make_f32(c.rope_theta));
  w.set(a + ".rope.dimension_count", u32(c.rope_dims));
  w.set(a + ".vocab_size", u32(c.n_vocab));
  if (c.pooling != Pooling::kNone) w.set(a + ".pooling_type", u32(static_cast<int64_t>(c.pooling)));
  if (c.yarn.factor > 0.0f) {
    w.set(a + ".rope.scaling.type", gguf::make_string("yarn"));
    w.set(a + ".rope.scaling.factor", gguf::make_f32(c.yarn.factor));
    w.set(a + ".rope.scaling.original_context_length", u32(c.yarn.original_context));
  }
  if (c.n_swa > 0) w.set(a + ".attention.sliding_window", u32(c.n_swa));
  if (c.arch == "gemma4") write_gemma4_metadata(c, w);
  if (c.arch == "gemma2" || c.arch == "gemma3" || c.arch == "gemma4") {
    // llama.cpp reads gemma2/3's period as a scalar
    if (c.n_swa > 0 && c.arch != "gemma4") w.set(a + ".attention.sliding_window_pattern", u32(c.swa_period));
    if (c.rope_theta_swa > 0.0f) w.set(a + ".rope.freq_base_swa", gguf::make_f32(c.rope_theta_swa));
    if (c.final_logit_softcap > 0.0f) w.set(a + ".final_logit_softcapping", gguf::make_f32(c.final_logit_softcap));
    if (c.attn_softcap > 0.0f) w.set(a + ".attn_logit_softcapping", gguf::make_f32(c.attn_softcap));
  }
  if (c.is_hybrid()) {
    w.set(a + ".full_attention_interval", u32(c.full_attn_interval));
    w.set(a + ".ssm.conv_kernel", u32(c.ssm_conv_kernel));
    w.set(a + ".ssm.state_size", u32(c.ssm_head_dim));
    w.set(a + ".ssm.group_count", u32(c.ssm_n_k_heads));
    w.set(a + ".ssm.time_step_rank", u32(c.ssm_n_v_heads));
    w.set(a + ".ssm.inner_size", u32(c.ssm_value_dim()));
    w.set(a + ".rope.dimension_sections", gguf::make_i32_array(text_rope_sections(c.rope_dims)));
  }
  if (c.yarn.factor == 0.0f && c.rope_freq_scale != 1.0f) {
    w.set(a + ".rope.scaling.type", gguf::make_string("linear"));
    w.set(a + ".rope.scaling.factor", gguf::make_f32(1.0f / c.rope_freq_scale));
  }
  if (c.is_moe()) {
    w.set(a + ".expert_count", u32(c.n_expert));
    w.set(a + ".expert_used_count", u32(c.n_expert_used));
    w.set(a + ".expert_feed_forward_length", u32(c.n_ff_exp));
    if (c.n_ff_shexp > 0) w.set(a + ".expert_shared_feed_forward_length", u32(c.n_ff_shexp));
    if (c.expert_weights_scale != 1.0f) {
      w.set(a + ".expert_weights_scale", gguf::make_f32(c.expert_weights_scale));
    }
  }
}

Result<ModelConfig> build_synthetic_model(const ModelConfig& cfg_in, const SynthOptions& opt, gguf::Writer& w) {
  ModelConfig c = cfg_in;
  if (opt.vocab) {
    RIDGE_ASSIGN_OR_RETURN(int64_t n_tokens, copy_tokenizer_metadata(*opt.vocab, w, c.n_vocab));
    c.n_vocab = n_tokens;
  } else {
    const std::string_view style = c.arch == "llama" ? "llama3" : "chatml";
    c.n_vocab = std::max(c.n_vocab, tokenizer::builtin_byte_tokenizer_min_vocab(style));
    tokenizer::write_builtin_byte_tokenizer(w, c.n_vocab, style);
  }
  write_config_metadata(c, w);
  w.set("general.file_type", gguf::make_u32(opt.mix ? quant_mix_info(*opt.mix).file_type : file_type_of(opt.type)));
  if (opt.mix || (opt.type != GgmlType::kF32 && opt.type != GgmlType::kF16 && opt.type != GgmlType::kBF16)) {
    w.set("general.quantization_version", gguf::make_u32(2));
  }

  // A mixture (q4_k_m, ...) picks each matrix's type by llama.cpp's rules (model/quant_mix.h).
  // Random weights have no activations to weigh: the i-quants that llama.cpp (and `ridge
  // quantize`) write only with an importance matrix are written here without one, in the types
  // the mixture gives with one (standard_tensor_type).
  // `--type mxfp4` is llama.cpp's MXFP4_MOE: the expert stacks in mxfp4, other matrices q8_0.
  const bool mxfp4_moe = !opt.mix && opt.type == GgmlType::kMXFP4;
  auto add_matrix = [&](const std::string& name, int64_t cols, int64_t rows, Init init, int64_t planes = 1) {
    GgmlType t = opt.mix ? standard_tensor_type(*opt.mix, c, name, static_cast<uint64_t>(cols)) : opt.type;
    if (mxfp4_moe && planes == 1) t = GgmlType::kQ8_0;
    return add_random(w, name, t, cols, rows, init, opt, planes);
  };
  const float logit_std = 2.5f;
  const Init embd{0.0f, logit_std / std::sqrt(static_cast<float>(c.n_embd))};
  const Init norm{1.0f, 0.1f};
  auto lin = linear_init;
  const GgmlType f32 = GgmlType::kF32;

  RIDGE_RETURN_IF_ERROR(add_matrix("token_embd.weight", c.n_embd, c.n_vocab, embd));
  if (c.rope_scaling.factor > 0.0f && c.arch == "llama") {
    std::vector<float> factors = llama3_rope_factors(c);
    RIDGE_RETURN_IF_ERROR(w.add_tensor_data(
        "rope_freqs.weight", f32, {factors.size()},
        std::span(reinterpret_cast<const uint8_t*>(factors.data()), factors.size() * sizeof(float))));
  }
  if (c.arch == "gemma4") RIDGE_RETURN_IF_ERROR(add_gemma4_globals(w, c, opt, add_matrix));
  // Block l: the trunk's, or (l >= n_layer) an MTP block: a full-attention block as the trunk's.
  auto add_block = [&](int64_t l) -> Status {
    const std::string p = "blk." + std::to_string(l) + ".";
    if (c.arch == "gemma4") return add_gemma4_layer(w, c, l, p, opt, add_matrix);
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "attn_norm.weight", f32, c.n_embd, 1, norm, opt));
    if (c.is_recurrent_layer(l)) {
      RIDGE_RETURN_IF_ERROR(add_linear_attention(w, c, p, opt, add_matrix));
    } else {
      RIDGE_RETURN_IF_ERROR(add_attention(w, c, p, opt, add_matrix));
    }
    if (c.post_norms) {
      RIDGE_RETURN_IF_ERROR(add_random(w, p + "post_attention_norm.weight", f32, c.n_embd, 1, norm, opt));
    }
    RIDGE_RETURN_IF_ERROR(add_random(w, p + std::string(ffn_norm_tensor(c)), f32, c.n_embd, 1, norm, opt));
    if (c.is_moe()) return add_experts(w, c, p, opt, add_matrix);
    RIDGE_RETURN_IF_ERROR(add_matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff, lin(c.n_embd)));
    RIDGE_RETURN_IF_ERROR(add_matrix(p + "ffn_up.weight", c.n_embd, c.n_ff, lin(c.n_embd)));
    RIDGE_RETURN_IF_ERROR(add_matrix(p + "ffn_down.weight", c.n_ff, c.n_embd, lin(c.n_ff)));
    if (c.post_norms) {
      RIDGE_RETURN_IF_ERROR(add_random(w, p + "post_ffw_norm.weight", f32, c.n_embd, 1, norm, opt));
    }
    return ok_status();
  };
  for (int64_t l = 0; l < c.n_layer; ++l) RIDGE_RETURN_IF_ERROR(add_block(l));
  // MTP blocks (Qwen3.5's nextn layers): the block, the projection of [enorm(embedding),
  // hnorm(h)] into it, and the norm before the shared head (the model's embedding and head).
  for (int64_t l = c.n_layer; l < c.n_layer + c.n_nextn_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".nextn.";
    RIDGE_RETURN_IF_ERROR(add_block(l));
    RIDGE_RETURN_IF_ERROR(add_matrix(p + "eh_proj.weight", 2 * c.n_embd, c.n_embd, lin(2 * c.n_embd)));
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "enorm.weight", f32, c.n_embd, 1, norm, opt));
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "hnorm.weight", f32, c.n_embd, 1, norm, opt));
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "shared_head_norm.weight", f32, c.n_embd, 1, norm, opt));
  }
  RIDGE_RETURN_IF_ERROR(add_random(w, "output_norm.weight", f32, c.n_embd, 1, norm, opt));
  if (!c.tied_embeddings) {
    RIDGE_RETURN_IF_ERROR(add_matrix("output.weight", c.n_embd, c.n_vocab, embd));
  }
  return c;
}

}  // namespace ridge::offline
