// The per-tensor type rules of the llama.cpp mixtures on real checkpoint shapes.
//
// Expected values are written out by hand from llama.cpp's documented rules (llama-quant.cpp,
// llama_tensor_get_type; docs/quantize.md), not computed by the code under test:
// - the output head gets q6_K (q8_0 stays q8_0); with tied embeddings token_embd is the head;
// - Q4_K_M / Q5_K_M give q6_K to attn_v and ffn_down in the "more bits" layers: the first n/8,
//   the last n/8 (i >= 7n/8) and every third layer in between ((i - n/8) % 3 == 2);
// - Q3_K_M: attn_v q5_K in the first two layers, else q4_K; ffn_down q5_K for i < n/16, else
//   q4_K; attn_output q4_K.  Q3_K_L: those three q5_K.  Q4_K_S: attn_v and ffn_down q5_K in the
//   first 4 attn_v / n/8 layers.  Q2_K: attn_v q3_K (q4_K when n_head/n_head_kv >= 4), ffn_down
//   and attn_output q3_K;
// - rows that do not fill whole 256-blocks: q4_K -> q5_0, q6_K -> q8_0, q2_K -> q4_0, and a
//   head whose rows do not fit the base type's blocks is q8_0.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "model/cost.h"
#include "model/quant_mix.h"

namespace ridge::model {
namespace {

using T = GgmlType;

// The tensors of a standard llama/qwen file with cfg's shapes (ggml order: row length first).
std::vector<TensorDesc> standard_tensors(const ModelConfig& c) {
  auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  std::vector<TensorDesc> t;
  t.push_back({"token_embd.weight", {u(c.n_embd), u(c.n_vocab)}, T::kF16});
  t.push_back({"output_norm.weight", {u(c.n_embd)}, T::kF32});
  if (!c.tied_embeddings) t.push_back({"output.weight", {u(c.n_embd), u(c.n_vocab)}, T::kF16});
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    t.push_back({p + "attn_norm.weight", {u(c.n_embd)}, T::kF32});
    t.push_back({p + "attn_q.weight", {u(c.n_embd), u(c.q_dim())}, T::kF16});
    t.push_back({p + "attn_k.weight", {u(c.n_embd), u(c.kv_dim())}, T::kF16});
    t.push_back({p + "attn_v.weight", {u(c.n_embd), u(c.kv_dim())}, T::kF16});
    if (c.qkv_bias) t.push_back({p + "attn_q.bias", {u(c.q_dim())}, T::kF32});
    if (c.qk_norm) t.push_back({p + "attn_q_norm.weight", {u(c.head_dim)}, T::kF32});
    t.push_back({p + "attn_output.weight", {u(c.q_dim()), u(c.n_embd)}, T::kF16});
    t.push_back({p + "ffn_norm.weight", {u(c.n_embd)}, T::kF32});
    t.push_back({p + "ffn_gate.weight", {u(c.n_embd), u(c.n_ff)}, T::kF16});
    t.push_back({p + "ffn_up.weight", {u(c.n_embd), u(c.n_ff)}, T::kF16});
    t.push_back({p + "ffn_down.weight", {u(c.n_ff), u(c.n_embd)}, T::kF16});
  }
  return t;
}

// name -> chosen type for a mixture on a preset.
std::map<std::string, TensorChoice> choose(const ModelConfig& cfg, QuantMix mix, std::vector<TensorTypeOverride> ov = {},
                                           bool pure = false) {
  const auto descs = standard_tensors(cfg);
  MixOptions opt;
  opt.mix = mix;
  opt.pure = pure;
  opt.overrides = std::move(ov);
  auto r = choose_tensor_types(descs, mix_model_of(cfg), opt);
  EXPECT_TRUE(r.ok()) << r.status().message();
  std::map<std::string, TensorChoice> out;
  for (size_t i = 0; r.ok() && i < descs.size(); ++i) out[descs[i].name] = (*r)[i];
  return out;
}

ModelConfig preset(const char* name) {
  auto c = preset_config(name);
  EXPECT_TRUE(c.ok());
  return *c;
}

std::string blk(int64_t l, const char* stem) { return "blk." + std::to_string(l) + "." + stem + ".weight"; }

TEST(QuantMix, Q4KMOnQwen3_0_6B) {
  const ModelConfig cfg = preset("qwen3-0.6b");  // 28 layers, tied embeddings
  auto t = choose(cfg, QuantMix::kQ4_K_M);
  // n = 28: n/8 = 3, 7n/8 = 24, and (i - 3) % 3 == 2 for 5, 8, ..., 23.
  const std::set<int64_t> more = {0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27};
  EXPECT_EQ(t["token_embd.weight"].type, T::kQ6_K);  // tied: the embedding is the output head
  EXPECT_FALSE(t["output_norm.weight"].convert);
  for (int64_t l = 0; l < 28; ++l) {
    SCOPED_TRACE(l);
    const T hi = more.count(l) ? T::kQ6_K : T::kQ4_K;
    EXPECT_EQ(t[blk(l, "attn_v")].type, hi);
    EXPECT_EQ(t[blk(l, "ffn_down")].type, hi);
    for (const char* s : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"}) EXPECT_EQ(t[blk(l, s)].type, T::kQ4_K);
    EXPECT_FALSE(t[blk(l, "attn_norm")].convert);
    EXPECT_FALSE(t[blk(l, "attn_q_norm")].convert);
    EXPECT_EQ(t[blk(l, "attn_q_norm")].type, T::kF32);
  }
}

TEST(QuantMix, Q4KMOnLlama2_7B) {
  const ModelConfig cfg = preset("llama-2-7b");  // 32 layers, separate output head
  auto t = choose(cfg, QuantMix::kQ4_K_M);
  // n = 32: n/8 = 4, 7n/8 = 28, (i - 4) % 3 == 2 for 6, 9, ..., 27.
  const std::set<int64_t> more = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
  EXPECT_EQ(t["token_embd.weight"].type, T::kQ4_K);
  EXPECT_EQ(t["output.weight"].type, T::kQ6_K);
  for (int64_t l = 0; l < 32; ++l) {
    const T hi = more.count(l) ? T::kQ6_K : T::kQ4_K;
    EXPECT_EQ(t[blk(l, "attn_v")].type, hi) << l;
    EXPECT_EQ(t[blk(l, "ffn_down")].type, hi) << l;
    EXPECT_EQ(t[blk(l, "attn_output")].type, T::kQ4_K) << l;
  }
}

TEST(QuantMix, OtherKMixturesOnLlama2_7B) {
  const ModelConfig cfg = preset("llama-2-7b");
  auto q3m = choose(cfg, QuantMix::kQ3_K_M);
  auto q3l = choose(cfg, QuantMix::kQ3_K_L);
  auto q3s = choose(cfg, QuantMix::kQ3_K_S);
  auto q4s = choose(cfg, QuantMix::kQ4_K_S);
  auto q2 = choose(cfg, QuantMix::kQ2_K);
  auto q5m = choose(cfg, QuantMix::kQ5_K_M);
  for (auto* m : {&q3m, &q3l, &q3s, &q4s, &q2, &q5m}) EXPECT_EQ((*m)["output.weight"].type, T::kQ6_K);
  EXPECT_EQ(q3m["token_embd.weight"].type, T::kQ3_K);
  for (int64_t l = 0; l < 32; ++l) {
    SCOPED_TRACE(l);
    EXPECT_EQ(q3m[blk(l, "attn_v")].type, l < 2 ? T::kQ5_K : T::kQ4_K);
    EXPECT_EQ(q3m[blk(l, "ffn_down")].type, l < 2 ? T::kQ5_K : T::kQ4_K);  // 32 / 16 = 2
    EXPECT_EQ(q3m[blk(l, "attn_output")].type, T::kQ4_K);
    EXPECT_EQ(q3m[blk(l, "attn_q")].type, T::kQ3_K);
    for (const char* s : {"attn_v", "ffn_down", "attn_output"}) EXPECT_EQ(q3l[blk(l, s)].type, T::kQ5_K);
    for (const char* s : {"attn_v", "ffn_down", "attn_output", "ffn_up"}) EXPECT_EQ(q3s[blk(l, s)].type, T::kQ3_K);
    EXPECT_EQ(q4s[blk(l, "attn_v")].type, l < 4 ? T::kQ5_K : T::kQ4_K);
    EXPECT_EQ(q4s[blk(l, "ffn_down")].type, l < 4 ? T::kQ5_K : T::kQ4_K);  // 32 / 8 = 4
    EXPECT_EQ(q2[blk(l, "attn_v")].type, T::kQ3_K);  // 32 / 32 heads: no GQA
    EXPECT_EQ(q2[blk(l, "ffn_down")].type, T::kQ3_K);
    EXPECT_EQ(q2[blk(l, "attn_output")].type, T::kQ3_K);
    EXPECT_EQ(q2[blk(l, "ffn_gate")].type, T::kQ2_K);
    EXPECT_EQ(q5m[blk(l, "attn_q")].type, T::kQ5_K);
  }
  EXPECT_EQ(q5m[blk(6, "attn_v")].type, T::kQ6_K);
  EXPECT_EQ(q5m[blk(7, "attn_v")].type, T::kQ5_K);
  // 28 query heads over 4 KV heads (GQA 7): Q2_K's attn_v gets q4_K.
  EXPECT_EQ(choose(preset("qwen2.5-7b"), QuantMix::kQ2_K)[blk(3, "attn_v")].type, T::kQ4_K);
}

TEST(QuantMix, LegacyAndFloatMixtures) {
  const ModelConfig cfg = preset("llama-2-7b");
  auto q40 = choose(cfg, QuantMix::kQ4_0);
  EXPECT_EQ(q40["output.weight"].type, T::kQ6_K);
  EXPECT_EQ(q40["token_embd.weight"].type, T::kQ4_0);
  EXPECT_EQ(q40[blk(0, "attn_v")].type, T::kQ4_0);
  EXPECT_EQ(q40[blk(0, "ffn_down")].type, T::kQ4_0);
  auto q80 = choose(cfg, QuantMix::kQ8_0);
  EXPECT_EQ(q80["output.weight"].type, T::kQ8_0);
  EXPECT_EQ(q80[blk(5, "ffn_down")].type, T::kQ8_0);
  auto q6 = choose(cfg, QuantMix::kQ6_K);
  EXPECT_EQ(q6[blk(0, "attn_v")].type, T::kQ6_K);
  auto f16 = choose(cfg, QuantMix::kF16);
  EXPECT_EQ(f16["output.weight"].type, T::kF16);
  EXPECT_EQ(f16[blk(0, "attn_v")].type, T::kF16);
  EXPECT_FALSE(f16["output_norm.weight"].convert);
  auto pure = choose(cfg, QuantMix::kQ4_K_M, {}, /*pure=*/true);
  EXPECT_EQ(pure["output.weight"].type, T::kQ4_K);
  EXPECT_EQ(pure[blk(0, "attn_v")].type, T::kQ4_K);
}

TEST(QuantMix, Llama70BGivesAttnVMoreBits) {
  ModelConfig cfg = preset("llama-2-7b");
  cfg.n_layer = 80;
  cfg.n_head = 64;
  cfg.n_head_kv = 8;
  auto t = choose(cfg, QuantMix::kQ4_K_M);
  EXPECT_EQ(t[blk(4, "attn_v")].type, T::kQ6_K);   // 4 < 80 / 8
  EXPECT_EQ(t[blk(11, "attn_v")].type, T::kQ5_K);  // not a more-bits layer: q4_K raised to q5_K
  EXPECT_EQ(t[blk(11, "ffn_down")].type, T::kQ4_K);
  EXPECT_EQ(choose(cfg, QuantMix::kQ3_K_S)[blk(11, "attn_v")].type, T::kQ5_K);
}

TEST(QuantMix, RowsThatDoNotFillSuperBlocksFallBack) {
  const ModelConfig cfg = preset("qwen2.5-0.5b");  // n_embd 896 = 3.5 x 256, n_ff 4864 = 19 x 256
  auto t = choose(cfg, QuantMix::kQ4_K_M);
  EXPECT_EQ(t[blk(0, "attn_q")].type, T::kQ5_0);
  EXPECT_EQ(t[blk(0, "attn_q")].wanted, T::kQ4_K);
  EXPECT_TRUE(t[blk(0, "attn_q")].fell_back());
  EXPECT_EQ(t[blk(0, "attn_v")].type, T::kQ8_0);  // q6_K wanted (first layers)
  EXPECT_EQ(t[blk(3, "attn_v")].type, T::kQ5_0);  // 24 layers: layer 3 is not a more-bits layer
  EXPECT_EQ(t[blk(0, "ffn_down")].type, T::kQ6_K);  // 4864 columns fit
  EXPECT_EQ(t[blk(3, "ffn_down")].type, T::kQ4_K);
  EXPECT_EQ(t[blk(0, "attn_output")].type, T::kQ5_0);  // 14 x 64 = 896 columns
  EXPECT_EQ(t["token_embd.weight"].type, T::kQ8_0);  // tied head with unfit rows: q8_0 by rule
  EXPECT_FALSE(t["token_embd.weight"].fell_back());
  EXPECT_EQ(choose(cfg, QuantMix::kQ2_K)[blk(0, "attn_q")].type, T::kQ4_0);
  EXPECT_EQ(choose(cfg, QuantMix::kQ5_K_S)[blk(0, "attn_q")].type, T::kQ5_1);
  EXPECT_EQ(fallback_type(T::kQ4_K, 100), T::kF16);  // not even 32-blocks fit
  EXPECT_EQ(fallback_type(T::kQ8_0, 100), T::kF16);
  EXPECT_EQ(fallback_type(T::kQ8_0, 96), T::kQ8_0);
}

TEST(QuantMix, OverridesByRegexAndGlob) {
  const ModelConfig cfg = preset("qwen3-0.6b");
  auto ov = [](const char* spec) {
    auto o = parse_tensor_type_override(spec);
    EXPECT_TRUE(o.ok()) << o.status().message();
    return *o;
  };
  auto t = choose(cfg, QuantMix::kQ4_K_M, {ov("^blk\\.0\\.=f16"), ov("attn_v=q8_0"), ov("blk.1?.ffn_*=q5_K")});
  EXPECT_EQ(t[blk(0, "attn_v")].type, T::kF16);  // the first matching pattern wins
  EXPECT_EQ(t[blk(0, "ffn_up")].type, T::kF16);
  EXPECT_EQ(t[blk(7, "attn_v")].type, T::kQ8_0);
  EXPECT_TRUE(t[blk(7, "attn_v")].overridden);
  EXPECT_EQ(t[blk(12, "ffn_gate")].type, T::kQ5_K);  // glob over the whole name
  EXPECT_EQ(t[blk(12, "ffn_down")].type, T::kQ5_K);
  EXPECT_EQ(t[blk(1, "ffn_down")].type, T::kQ6_K);   // "1?" needs two digits
  EXPECT_EQ(t[blk(4, "ffn_down")].type, T::kQ4_K);
  EXPECT_FALSE(t["blk.12.ffn_norm.weight"].convert);  // norms never match: not quantizable
  // Overridden tensors still fall back on unfit rows.
  auto q = choose(preset("qwen2.5-0.5b"), QuantMix::kQ8_0, {ov("attn_q=q4_K")});
  EXPECT_EQ(q[blk(0, "attn_q")].type, T::kQ5_0);
  for (const char* bad : {"attn_v", "=q8_0", "attn_v=", "attn_v=q9_9", "attn_v=iq2_xxs", "attn_v[=q8_0"}) {
    auto r = parse_tensor_type_override(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_TRUE(r.status().is_usage()) << bad;
    }
  }
}

TEST(QuantMix, NamesAndQuantizableTensors) {
  EXPECT_EQ(*quant_mix_from_name("Q4_K_M"), QuantMix::kQ4_K_M);
  EXPECT_EQ(*quant_mix_from_name("q4_k"), QuantMix::kQ4_K_M);  // llama-quantize's alias
  EXPECT_EQ(*quant_mix_from_name("bf16"), QuantMix::kBF16);
  auto bad = quant_mix_from_name("q7_k");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("q3_k_m"), std::string::npos) << bad.status().message();
  EXPECT_TRUE(is_mixture_only_name("q3_k_s"));
  EXPECT_FALSE(is_mixture_only_name("q4_K"));
  EXPECT_FALSE(is_mixture_only_name("q8_0"));
  EXPECT_EQ(quant_mix_info(QuantMix::kQ4_K_M).file_type, 15u);
  EXPECT_EQ(quant_mix_info(QuantMix::kQ8_0).file_type, 7u);
  EXPECT_EQ(quant_mix_info(QuantMix::kBF16).file_type, 32u);
  const uint64_t mat[] = {1024, 2048}, vec[] = {1024}, col[] = {1024, 1};
  EXPECT_TRUE(tensor_is_quantizable("blk.0.attn_q.weight", mat));
  EXPECT_FALSE(tensor_is_quantizable("blk.0.attn_q.bias", vec));
  EXPECT_FALSE(tensor_is_quantizable("blk.0.attn_norm.weight", vec));
  EXPECT_FALSE(tensor_is_quantizable("rope_freqs.weight", vec));
  EXPECT_FALSE(tensor_is_quantizable("blk.0.attn_q.weight", col));  // [1024, 1] is one-dimensional
  EXPECT_FALSE(tensor_is_quantizable("blk.0.ffn_gate_inp.weight", mat));
  EXPECT_FALSE(tensor_is_quantizable("blk.0.attn_k_norm.weight", mat));
}

// File sizes llama.cpp produced for Llama-2-7B (TheBloke/Llama-2-7B-GGUF, "Provided files", GB
// = 1e9 bytes, two decimals; metadata adds < 1 MB). Q2_K is left out: its rules changed since.
TEST(QuantMix, Llama2_7BSizesMatchPublishedFiles) {
  const ModelConfig cfg = preset("llama-2-7b");
  const auto descs = standard_tensors(cfg);
  const std::pair<QuantMix, double> published[] = {
      {QuantMix::kQ3_K_S, 2.95}, {QuantMix::kQ3_K_M, 3.30}, {QuantMix::kQ3_K_L, 3.60}, {QuantMix::kQ4_0, 3.83},
      {QuantMix::kQ4_K_S, 3.86}, {QuantMix::kQ4_K_M, 4.08}, {QuantMix::kQ5_0, 4.65}, {QuantMix::kQ5_K_S, 4.65},
      {QuantMix::kQ5_K_M, 4.78}, {QuantMix::kQ6_K, 5.53},  {QuantMix::kQ8_0, 7.16}};
  for (const auto& [mix, gb] : published) {
    MixOptions opt;
    opt.mix = mix;
    auto r = choose_tensor_types(descs, mix_model_of(cfg), opt);
    ASSERT_TRUE(r.ok());
    double bytes = 0;
    for (size_t i = 0; i < descs.size(); ++i) {
      const auto& d = descs[i];
      const GgmlType t = (*r)[i].convert ? (*r)[i].type : d.type;
      bytes += static_cast<double>(*ggml_row_bytes(t, d.shape[0])) * static_cast<double>(d.shape.size() > 1 ? d.shape[1] : 1);
    }
    EXPECT_NEAR(bytes / 1e9, gb, 0.006) << quant_mix_info(mix).name;
  }
}

// The single-tensor entry (synth, roofline) gives what the whole-file planner gives.
TEST(QuantMix, StandardTensorTypeAgreesWithWholeFilePlan) {
  for (const char* p : {"qwen3-0.6b", "qwen2.5-0.5b", "llama-2-7b", "qwen3-8b", "tiny-llama"}) {
    const ModelConfig cfg = preset(p);
    for (const auto& info : quant_mixes()) {
      const auto descs = standard_tensors(cfg);
      auto t = choose(cfg, info.mix);
      for (const auto& d : descs) {
        if (!t[d.name].convert) continue;
        EXPECT_EQ(standard_tensor_type(info.mix, cfg, d.name, d.shape[0]), t[d.name].type)
            << p << " " << info.name << " " << d.name;
      }
    }
  }
}

// The roofline's byte counts use the same rules (model/cost.h).
TEST(QuantMix, CostModelUsesTheRules) {
  const ModelConfig cfg = preset("qwen3-0.6b");
  auto fn = weight_types_by_name("q3_k_m", cfg);
  ASSERT_TRUE(fn.ok()) << fn.status().message();
  EXPECT_EQ((*fn)(TensorRole::kAttnV, 0), T::kQ5_K);
  EXPECT_EQ((*fn)(TensorRole::kAttnV, 5), T::kQ4_K);
  EXPECT_EQ((*fn)(TensorRole::kAttnO, 5), T::kQ4_K);
  EXPECT_EQ((*fn)(TensorRole::kFfnUp, 5), T::kQ3_K);
  EXPECT_EQ((*fn)(TensorRole::kTokenEmbd, -1), T::kQ6_K);
  EXPECT_EQ((*fn)(TensorRole::kAttnNorm, 3), T::kF32);
  auto km = weight_types_by_name("q4_k_m", cfg);
  ASSERT_TRUE(km.ok());
  EXPECT_EQ((*km)(TensorRole::kFfnDown, 5), T::kQ6_K);
  EXPECT_EQ((*km)(TensorRole::kFfnDown, 6), T::kQ4_K);
  auto uniform = weight_types_by_name("q4_K", cfg);  // a ggml type name: every matrix in it
  ASSERT_TRUE(uniform.ok());
  EXPECT_EQ((*uniform)(TensorRole::kAttnV, 0), T::kQ4_K);
}

}  // namespace
}  // namespace ridge::model
