// ridge quantize: every mixture on synthetic F32 models decodes close to the original, the
// dry-run plan is what gets written, metadata survives, output ignores the thread count, and the
// CLI's errors are one line with the right exit code.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "kernels/quant/quants.h"
#include "offline/presets.h"
#include "offline/quantize.h"
#include "offline/synth.h"
#include "quantize_test_util.h"

namespace ridge::offline {
namespace {

using namespace quantize_testing;  // NOLINT(google-build-using-namespace)

// Relative RMS error a format may show on the synthetic weights (uniform in [-a, a]): a b-level
// uniform quantizer of a block's range leaves noise step/sqrt(12) with step = 2a/(L-1), i.e.
// rms(error)/rms(x) = 1/(L-1); the bound is 1.3x that (K-quants' per-block scales are themselves
// quantized). f16 / bf16: half an ulp at 11 / 8 bits of mantissa.
double tolerance(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return 0.0;
    case GgmlType::kF16: return 1.3 * std::ldexp(1.0, -11);
    case GgmlType::kBF16: return 1.3 * std::ldexp(1.0, -8);
    case GgmlType::kQ8_0: return 1.3 / 254;
    case GgmlType::kQ6_K: return 1.3 / 63;
    case GgmlType::kQ5_0: case GgmlType::kQ5_1: case GgmlType::kQ5_K: return 1.3 / 31;
    case GgmlType::kQ4_0: case GgmlType::kQ4_1: case GgmlType::kQ4_K: return 1.3 / 15;
    case GgmlType::kIQ4_NL: case GgmlType::kIQ4_XS: return 1.3 / 15;  // 16 levels, denser near 0: 0.062 measured
    case GgmlType::kQ3_K: return 1.3 / 7;
    case GgmlType::kQ2_K: return 1.3 / 3;
    // E2M1 steps up to 2 of 6 under a power-of-two scale that may clip amax by up to 8/6: 0.101
    // measured on the uniform synthetic rows.
    case GgmlType::kMXFP4: return 0.13;
    default: return -1.0;
  }
}

// The grid and ternary mixtures (iq1_s ... iq3_m, tq1_0, tq2_0: a base type without a bound
// here) are left out of the decode checks: their types are checked against llama.cpp by
// quant_mix_llama_test.cpp, their formats' error by the kernels' tests, and most need an
// importance matrix (quantize_cli_test.cpp writes iq3_s and iq2_xxs files).
bool grid_mixture(const QuantMixInfo& info) { return tolerance(info.base) < 0; }

// Decodes row r of any writable type.
std::vector<float> decode_row(const gguf::TensorInfo& t, uint64_t r) {
  std::vector<float> out(t.cols());
  const uint64_t row_bytes = t.n_bytes / t.rows();
  const uint8_t* src = t.data + r * row_bytes;
  if (t.type == GgmlType::kF32 || t.type == GgmlType::kF16 || t.type == GgmlType::kBF16) {
    decode_float_row(t.type, src, out.data(), static_cast<int64_t>(t.cols()));
  } else {
    kernels::dequantize_row_quant(t.type, src, out.data(), static_cast<int64_t>(t.cols()));
  }
  return out;
}

// Checks every tensor; returns the worst relative RMS error per written type.
std::map<GgmlType, double> expect_decodes_close(const gguf::File& in, const Quantized& q, const std::string& what) {
  std::map<GgmlType, double> worst;
  EXPECT_EQ(q.file->tensors().size(), in.tensors().size());
  if (q.file->tensors().size() != in.tensors().size()) return worst;
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const auto& a = in.tensors()[i];
    const auto& b = q.file->tensors()[i];
    SCOPED_TRACE(what + " " + a.name);
    EXPECT_EQ(b.name, a.name);
    if (b.name != a.name) return worst;
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.type, q.plan.tensors[i].choice.type);
    EXPECT_EQ(b.n_bytes, q.plan.tensors[i].bytes_out);  // dry-run size == written size
    double err = 0, ref = 0;
    for (uint64_t r = 0; r < a.rows(); ++r) {
      const auto x = decode_row(a, r), y = decode_row(b, r);
      for (size_t k = 0; k < x.size(); ++k) {
        err += (static_cast<double>(y[k]) - x[k]) * (static_cast<double>(y[k]) - x[k]);
        ref += static_cast<double>(x[k]) * x[k];
      }
    }
    const double rel = std::sqrt(err / std::max(ref, 1e-30));
    EXPECT_LE(rel, tolerance(b.type)) << ggml_type_name(b.type);
    worst[b.type] = std::max(worst[b.type], rel);
  }
  return worst;
}

// 256-wide shapes so that every K format is really used (the tiny presets are 64 wide).
TEST(Quantize, EveryMixtureDecodesCloseOnWideSynthetic) {
  std::map<GgmlType, double> worst;
  for (const char* arch : {"qwen3", "llama"}) {
    const Synth in = synth_f32(wide_config(arch), 5);
    for (const auto& info : quant_mixes()) {
      if (grid_mixture(info)) continue;
      const Quantized q = quantize(*in.file, info.mix);
      ASSERT_TRUE(q.file) << info.name;
      for (auto [t, e] : expect_decodes_close(*in.file, q, std::string(arch) + " " + std::string(info.name))) {
        worst[t] = std::max(worst[t], e);
      }
      EXPECT_EQ(q.plan.n_fallback, 0) << info.name;
    }
  }
  for (auto [t, e] : worst) {
    std::printf("[ figures  ] %-5s worst relative RMS error %.4f (bound %.4f)\n", std::string(ggml_type_name(t)).c_str(), e,
                tolerance(t));
  }
}

// 64-wide rows: K formats fall back (q4_K -> q5_0, q2_K/q3_K -> q4_0, q6_K -> q8_0).
TEST(Quantize, EveryMixtureDecodesCloseOnTinyPresets) {
  for (const char* p : {"tiny-llama", "tiny-qwen2", "tiny-qwen3"}) {
    auto cfg = preset_config(p);
    ASSERT_TRUE(cfg.ok());
    const Synth in = synth_f32(*cfg, 9);
    for (const auto& info : quant_mixes()) {
      const Quantized q = quantize(*in.file, info.mix);
      ASSERT_TRUE(q.file) << info.name;
      expect_decodes_close(*in.file, q, std::string(p) + " " + std::string(info.name));
      if (info.base == GgmlType::kQ4_K) {
        const auto* t = q.file->find_tensor("blk.0.attn_q.weight");
        ASSERT_NE(t, nullptr);
        EXPECT_EQ(t->type, GgmlType::kQ5_0);
      }
    }
  }
}

TEST(Quantize, MetadataCopiedAndFileTypeUpdated) {
  const Synth in = synth_f32(wide_config("qwen3"), 2);
  const Quantized q = quantize(*in.file, QuantMix::kQ4_K_M);
  ASSERT_TRUE(q.file);
  for (const auto& [key, value] : in.file->metadata()) {
    const gguf::Value* v = q.file->find(key);
    ASSERT_NE(v, nullptr) << key;
    if (key == "general.file_type") continue;
    EXPECT_EQ(v->to_display(1u << 20), value.to_display(1u << 20)) << key;
  }
  EXPECT_EQ(*q.file->get_uint("general.file_type"), 15u);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  EXPECT_EQ(*q.file->get_uint("general.quantization_version"), 2u);
  EXPECT_EQ(q.file->alignment(), in.file->alignment());
}

TEST(Quantize, OutputDoesNotDependOnThreads) {
  const Synth in = synth_f32(wide_config("llama"), 4);
  for (QuantMix mix : {QuantMix::kQ4_K_M, QuantMix::kQ2_K, QuantMix::kQ5_1, QuantMix::kBF16}) {
    const Quantized a = quantize(*in.file, mix, 1), b = quantize(*in.file, mix, 3);
    EXPECT_EQ(a.bytes, b.bytes) << quant_mix_info(mix).name;
  }
}

// `ridge synth --type q4_k_m` and `ridge quantize` of the same model in F32 agree byte for byte
// in every tensor: one set of rules, one quantizer.
TEST(Quantize, SynthMixtureEqualsQuantizedF32) {
  std::vector<ModelConfig> cfgs = {wide_config("qwen3")};
  for (const char* p : {"tiny-qwen3moe", "tiny-qwen2moe", "tiny-gpt-oss"}) cfgs.push_back(*preset_config(p));  // 3-D experts
  for (const ModelConfig& cfg : cfgs) {
    SCOPED_TRACE(cfg.name);
    const Synth f32 = synth_f32(cfg, 11);
    for (QuantMix mix : {QuantMix::kQ4_K_M, QuantMix::kQ3_K_S, QuantMix::kMXFP4_MOE}) {
      const Quantized q = quantize(*f32.file, mix);
      SynthOptions so;
      so.mix = mix;
      so.seed = 11;
      so.n_threads = 1;
      const Synth direct = synth_with(cfg, so);
      ASSERT_EQ(direct.file->tensors().size(), q.file->tensors().size());
      for (size_t i = 0; i < q.file->tensors().size(); ++i) {
        const auto& a = direct.file->tensors()[i];
        const auto& b = q.file->tensors()[i];
        ASSERT_EQ(a.name, b.name);
        EXPECT_EQ(a.type, b.type) << a.name;
        ASSERT_EQ(a.n_bytes, b.n_bytes) << a.name;
        EXPECT_EQ(0, std::memcmp(a.data, b.data, a.n_bytes)) << a.name;
      }
      EXPECT_EQ(*direct.file->get_uint("general.file_type"), quant_mix_info(mix).file_type);
    }
  }
}

TEST(Quantize, RefusesQuantizedInput) {
  const Synth in = synth_f32(wide_config("llama"), 1);
  const Quantized q = quantize(*in.file, QuantMix::kQ8_0);
  ASSERT_TRUE(q.file);
  QuantizeOptions opt;
  opt.mix.mix = QuantMix::kQ4_K_M;
  auto again = plan_quantization(*q.file, opt);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already quantized"), std::string::npos) << again.status().message();
}

// Mixture-of-experts files: every 3-D expert stack converted row by row (shape[1] * shape[2] rows
// of shape[0]), decoding close to the input; the routers and 1-D tensors copied; the types those of
// the MoE rules (tests/model/quant_mix_test.cpp derives them from llama-quant.cpp).
TEST(Quantize, MixtureOfExpertsDecodesClose) {
  for (const char* arch : {"qwen3moe", "qwen2moe"}) {
    const ModelConfig cfg = wide_moe_config(arch);
    const Synth in = synth_moe_f32(cfg, 13);
    ASSERT_TRUE(in.file) << arch;
    const auto* stack = in.file->find_tensor("blk.1.ffn_down_exps.weight");
    ASSERT_NE(stack, nullptr);
    EXPECT_EQ(stack->shape, (std::vector<uint64_t>{256, 256, static_cast<uint64_t>(cfg.n_expert)}));
    for (const auto& info : quant_mixes()) {
      if (grid_mixture(info)) continue;
      const Quantized q = quantize(*in.file, info.mix);
      ASSERT_TRUE(q.file) << arch << " " << info.name;
      expect_decodes_close(*in.file, q, std::string(arch) + " " + std::string(info.name));
      EXPECT_EQ(q.plan.n_fallback, 0) << info.name;
      const auto* router = q.file->find_tensor("blk.0.ffn_gate_inp.weight");
      ASSERT_NE(router, nullptr);
      EXPECT_EQ(router->type, GgmlType::kF32);
      for (const char* name : {"blk.0.ffn_gate_exps.weight", "blk.3.ffn_down_exps.weight"}) {
        const auto* t = q.file->find_tensor(name);
        ASSERT_NE(t, nullptr) << name;
        EXPECT_EQ(t->shape.size(), 3u) << name;
        EXPECT_EQ(t->n_bytes, *ggml_row_bytes(t->type, t->shape[0]) * t->shape[1] * t->shape[2]) << name;
      }
    }
    const Quantized km = quantize(*in.file, QuantMix::kQ4_K_M);
    ASSERT_TRUE(km.file);
    // 4 layers: use_more_bits(i, 4) for i = 0 (< 4/8 = 0? no), i >= 7*4/8 = 3, (i - 0) % 3 == 2:
    // layers 2 and 3; the experts' (and shared expert's) ffn_down by their layer.
    for (int l = 0; l < 4; ++l) {
      const GgmlType hi = l >= 2 ? GgmlType::kQ6_K : GgmlType::kQ4_K;
      const std::string p = "blk." + std::to_string(l) + ".";
      EXPECT_EQ(km.file->find_tensor(p + "ffn_down_exps.weight")->type, hi) << l;
      EXPECT_EQ(km.file->find_tensor(p + "ffn_up_exps.weight")->type, GgmlType::kQ4_K) << l;
      if (cfg.n_ff_shexp > 0) {
        EXPECT_EQ(km.file->find_tensor(p + "ffn_down_shexp.weight")->type, hi) << l;
        EXPECT_EQ(km.file->find_tensor(p + "ffn_gate_inp_shexp.weight")->type, GgmlType::kF32) << l;
      }
      // 8 experts (qwen3moe): llama.cpp's 8-expert rules give attn_v and attn_k q8_0, attn_output q5_K.
      if (cfg.n_expert == 8) {
        EXPECT_EQ(km.file->find_tensor(p + "attn_v.weight")->type, GgmlType::kQ8_0) << l;
        EXPECT_EQ(km.file->find_tensor(p + "attn_k.weight")->type, GgmlType::kQ8_0) << l;
        EXPECT_EQ(km.file->find_tensor(p + "attn_output.weight")->type, GgmlType::kQ5_K) << l;
      }
    }
    EXPECT_EQ(*km.file->get_string("general.architecture"), arch);
    EXPECT_EQ(*km.file->get_int(std::string(arch) + ".expert_count"), cfg.n_expert);
  }
}

// An FFN tensor of an MoE file without a layer number stops the plan, as in llama.cpp.
TEST(Quantize, MixtureOfExpertsFfnTensorWithoutLayerIsAnError) {
  gguf::Writer w;
  w.set("general.architecture", gguf::make_string("llama"));
  w.set("llama.block_count", gguf::make_u32(1));
  w.set("llama.expert_count", gguf::make_u32(8));
  std::vector<float> data(256 * 4 * 8, 0.5f);
  ASSERT_TRUE(w.add_tensor_data("ffn_down_exps.weight", GgmlType::kF32, {256, 4, 8},
                                std::span(reinterpret_cast<const uint8_t*>(data.data()), data.size() * 4)).ok());
  auto bytes = w.write_to_memory();
  ASSERT_TRUE(bytes.ok());
  auto moe = gguf::File::parse(*bytes, "moe.gguf");
  ASSERT_TRUE(moe.ok());
  QuantizeOptions opt;
  opt.mix.mix = QuantMix::kQ4_K_M;
  auto r = plan_quantization(*moe, opt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ffn_down_exps.weight"), std::string::npos) << r.status().message();
  opt.mix.mix = QuantMix::kQ8_0;
  opt.mix.pure = true;  // --pure: no rule asks for the layer
  auto p = plan_quantization(*moe, opt);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->tensors[0].bytes_out, 8u * 4 * 34 * 256 / 32);  // 32 rows of 256 in q8_0
}

}  // namespace
}  // namespace ridge::offline
