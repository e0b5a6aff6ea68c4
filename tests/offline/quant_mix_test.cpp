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

#include "kernels/quant/quants.h"
#include "model/cost.h"
#include "offline/presets.h"
#include "offline/quant_mix.h"
#include "offline/weight_types.h"

namespace ridge::offline {
namespace {

using model::TensorRole;

using T = GgmlType;

uint64_t u(int64_t x) { return static_cast<uint64_t>(x); }

// The embedding, the final norm and an untied output head, in ggml's order (row length first).
std::vector<TensorDesc> head_tensors(const ModelConfig& c) {
  std::vector<TensorDesc> t;
  t.push_back({"token_embd.weight", {u(c.n_embd), u(c.n_vocab)}, T::kF16});
  t.push_back({"output_norm.weight", {u(c.n_embd)}, T::kF32});
  if (!c.tied_embeddings) t.push_back({"output.weight", {u(c.n_embd), u(c.n_vocab)}, T::kF16});
  return t;
}

// A layer's attention norm and q/k/v matrices (`p`: "blk.N.").
void push_attention_inputs(std::vector<TensorDesc>& t, const std::string& p, const ModelConfig& c) {
  t.push_back({p + "attn_norm.weight", {u(c.n_embd)}, T::kF32});
  t.push_back({p + "attn_q.weight", {u(c.n_embd), u(c.q_dim())}, T::kF16});
  t.push_back({p + "attn_k.weight", {u(c.n_embd), u(c.kv_dim())}, T::kF16});
  t.push_back({p + "attn_v.weight", {u(c.n_embd), u(c.kv_dim())}, T::kF16});
}

// The tensors of a standard llama/qwen file with cfg's shapes (ggml order: row length first).
std::vector<TensorDesc> standard_tensors(const ModelConfig& c) {
  std::vector<TensorDesc> t = head_tensors(c);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    push_attention_inputs(t, p, c);
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
  opt.imatrix = quant_mix_info(mix).needs_imatrix;  // as standard_tensor_type (what quantize writes)
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
  for (const char* bad : {"attn_v", "=q8_0", "attn_v=", "attn_v=q9_9", "attn_v=q8_K", "attn_v=i8", "attn_v[=q8_0"}) {
    auto r = parse_tensor_type_override(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_TRUE(r.status().is_usage()) << bad;
    }
  }
  // The types ridge writes: the float ones and what the kernels quantize to, listed in the error.
  EXPECT_EQ(parse_tensor_type_override("attn_v=iq2_xxs").ok(), kernels::can_quantize(T::kIQ2_XXS));
  EXPECT_EQ(parse_tensor_type_override("attn_v=tq1_0").ok(), kernels::can_quantize(T::kTQ1_0));
  const std::string msg = parse_tensor_type_override("attn_v=q8_K").status().message();
  const size_t list = msg.find('(');
  EXPECT_NE(msg.find("(f32, f16, bf16, q4_0, ", list), std::string::npos) << msg;
  EXPECT_NE(msg.find("iq4_xs", list), std::string::npos) << msg;
  EXPECT_EQ(msg.find("q8_K", list), std::string::npos) << msg;
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

// ---------------------------------------------------------------------------------------------
// Mixture-of-experts files. The rules, from /tmp/llama-src/src/llama-quant.cpp (llama.cpp as of
// this commit), line numbers of that file:
// - tensor_get_category (119-153): by substring, in order: output, token_embd, attn_qkv, attn_kv_b,
//   attn_v, attn_k, attn_q, attn_output, ffn_up, ffn_gate, ffn_down. So ffn_gate_exps and
//   ffn_gate_shexp are FFN_GATE, ffn_up_exps / ffn_up_shexp FFN_UP, ffn_down_exps /
//   ffn_down_shexp FFN_DOWN.
// - tensor_allows_quantization (287-306): 2-D and 3-D tensors only (ggml_n_dims < 2: copied), and
//   never "ffn_gate_inp.weight" (the router). ffn_gate_inp_shexp is 1-D: copied too.
// - layer_info (438-452): when n_expert > 1 the FFN rules (ffn_down 591, ffn_gate 663, ffn_up 671)
//   take the layer from the name ("blk.%d."), not from the running counter, with n = n_layer
//   (906); a name without a layer, or a layer >= n_layer, stops the quantization.
// - n_expert == 8: attn_v -> q8_0 in every mixture (565-569, after the other attn_v rules);
//   attn_k -> q8_0 (571-575); attn_output -> q5_K for Q2_K, Q3_K_S, Q3_K_M, Q4_K_S, Q4_K_M (and
//   iq mixtures), left at the base type for the others (637-643).
// - quantization rows: ne[1] * ne[2] rows of ne[0] (1281); sizes: nrows * row_size (1211).
// ---------------------------------------------------------------------------------------------

// The tensors of a mixture-of-experts file with cfg's shapes: 3-D expert stacks (qwen2moe,
// qwen3moe, Mixtral converted today), or one 2-D tensor per expert "blk.N.ffn_down.E.weight" (old
// Mixtral files) when per_expert.
std::vector<TensorDesc> moe_tensors(const ModelConfig& c, bool per_expert = false) {
  std::vector<TensorDesc> t = head_tensors(c);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    push_attention_inputs(t, p, c);
    if (c.qk_norm) t.push_back({p + "attn_k_norm.weight", {u(c.head_dim)}, T::kF32});
    t.push_back({p + "attn_output.weight", {u(c.q_dim()), u(c.n_embd)}, T::kF16});
    t.push_back({p + "ffn_norm.weight", {u(c.n_embd)}, T::kF32});
    t.push_back({p + "ffn_gate_inp.weight", {u(c.n_embd), u(c.n_expert)}, T::kF32});
    if (per_expert) {
      for (int64_t e = 0; e < c.n_expert; ++e) {
        const std::string x = "." + std::to_string(e) + ".weight";
        t.push_back({p + "ffn_gate" + x, {u(c.n_embd), u(c.n_ff_exp)}, T::kF16});
        t.push_back({p + "ffn_up" + x, {u(c.n_embd), u(c.n_ff_exp)}, T::kF16});
        t.push_back({p + "ffn_down" + x, {u(c.n_ff_exp), u(c.n_embd)}, T::kF16});
      }
    } else {
      t.push_back({p + "ffn_gate_exps.weight", {u(c.n_embd), u(c.n_ff_exp), u(c.n_expert)}, T::kBF16});
      t.push_back({p + "ffn_up_exps.weight", {u(c.n_embd), u(c.n_ff_exp), u(c.n_expert)}, T::kBF16});
      t.push_back({p + "ffn_down_exps.weight", {u(c.n_ff_exp), u(c.n_embd), u(c.n_expert)}, T::kBF16});
    }
    if (c.n_ff_shexp > 0) {
      t.push_back({p + "ffn_gate_inp_shexp.weight", {u(c.n_embd)}, T::kF32});
      t.push_back({p + "ffn_gate_shexp.weight", {u(c.n_embd), u(c.n_ff_shexp)}, T::kBF16});
      t.push_back({p + "ffn_up_shexp.weight", {u(c.n_embd), u(c.n_ff_shexp)}, T::kBF16});
      t.push_back({p + "ffn_down_shexp.weight", {u(c.n_ff_shexp), u(c.n_embd)}, T::kBF16});
    }
  }
  return t;
}

Result<std::map<std::string, TensorChoice>> choose_moe(const ModelConfig& cfg, QuantMix mix, bool per_expert = false,
                                                       std::vector<TensorDesc> descs = {}) {
  if (descs.empty()) descs = moe_tensors(cfg, per_expert);
  MixOptions opt;
  opt.mix = mix;
  opt.imatrix = quant_mix_info(mix).needs_imatrix;
  RIDGE_ASSIGN_OR_RETURN(auto r, choose_tensor_types(descs, mix_model_of(cfg), opt));
  std::map<std::string, TensorChoice> out;
  for (size_t i = 0; i < descs.size(); ++i) out[descs[i].name] = r[i];
  return out;
}

// Mixtral-8x7B's shape (a llama with 8 experts of 14336 rows, 2 per token).
ModelConfig mixtral() {
  ModelConfig c = preset("llama-2-7b");
  c.name = "mixtral-8x7b";
  c.n_head_kv = 8;
  c.n_vocab = 32000;
  c.n_expert = 8;
  c.n_expert_used = 2;
  c.n_ff_exp = 14336;
  return c;
}

// A qwen2moe shape with 16 layers whose rows fill 256-blocks, to tell the layer rule from the
// counter: two ffn_down per layer (experts and shared expert).
ModelConfig qwen2moe_16() {
  ModelConfig c = preset("tiny-qwen2moe");
  c.n_embd = 256;
  c.n_layer = 16;
  c.head_dim = 64;
  c.rope_dims = 64;
  c.n_ff_exp = 256;
  c.n_ff_shexp = 512;
  return c;
}

TEST(QuantMixMoe, Q4KMOnQwen3_30B_A3B) {
  const ModelConfig cfg = preset("qwen3-30b-a3b");  // 48 layers, 128 experts of 768 rows, 32/4 heads
  auto r = choose_moe(cfg, QuantMix::kQ4_K_M);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto& t = *r;
  // use_more_bits(i, 48) (434-436): i < 6, i >= 42, or (i - 6) % 3 == 2: 8, 11, ..., 41.
  std::set<int64_t> more = {0, 1, 2, 3, 4, 5, 42, 43, 44, 45, 46, 47};
  for (int64_t i = 8; i < 42; i += 3) more.insert(i);
  EXPECT_EQ(more.size(), 24u);
  EXPECT_EQ(t["output.weight"].type, T::kQ6_K);      // 456-474: the head
  EXPECT_EQ(t["token_embd.weight"].type, T::kQ4_K);  // not tied: the base type
  for (int64_t l = 0; l < 48; ++l) {
    SCOPED_TRACE(l);
    const T hi = more.count(l) ? T::kQ6_K : T::kQ4_K;
    EXPECT_EQ(t[blk(l, "attn_v")].type, hi);          // 556-557, counter = layer (one per layer)
    EXPECT_EQ(t[blk(l, "ffn_down_exps")].type, hi);   // 590-633 with the layer from the name
    EXPECT_TRUE(t[blk(l, "ffn_down_exps")].convert);  // 3-D: quantized (292)
    for (const char* s : {"attn_q", "attn_k", "attn_output", "ffn_gate_exps", "ffn_up_exps"}) {
      EXPECT_EQ(t[blk(l, s)].type, T::kQ4_K) << s;  // 128 experts: no 8-expert rule
    }
    EXPECT_FALSE(t[blk(l, "ffn_gate_inp")].convert);  // the router stays f32 (306)
    EXPECT_EQ(t[blk(l, "ffn_gate_inp")].type, T::kF32);
  }
}

// llama-quant.cpp 478-490 (MXFP4_MOE): 3-D tensors mxfp4, every other quantizable tensor q8_0,
// the output head too (463-464); routers and norms untouched.
TEST(QuantMixMoe, Mxfp4MoeOnGptOss20B) {
  const ModelConfig cfg = preset("gpt-oss-20b");
  auto r = choose_moe(cfg, QuantMix::kMXFP4_MOE);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto& t = *r;
  EXPECT_EQ(t["output.weight"].type, T::kQ8_0);
  EXPECT_EQ(t["token_embd.weight"].type, T::kQ8_0);
  for (int64_t l : {0, 1, 23}) {
    SCOPED_TRACE(l);
    for (const char* s : {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}) {
      EXPECT_EQ(t[blk(l, s)].type, T::kMXFP4) << s;
      EXPECT_EQ(standard_tensor_type(QuantMix::kMXFP4_MOE, cfg, blk(l, s), 2880), T::kMXFP4) << s;
    }
    for (const char* s : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
      EXPECT_EQ(t[blk(l, s)].type, T::kQ8_0) << s;
      EXPECT_EQ(standard_tensor_type(QuantMix::kMXFP4_MOE, cfg, blk(l, s), 2880), T::kQ8_0) << s;
    }
    EXPECT_EQ(t[blk(l, "ffn_gate_inp")].type, T::kF32);
  }
  auto m = quant_mix_from_name("MXFP4_MOE");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(quant_mix_info(*m).file_type, 38u);  // LLAMA_FTYPE_MOSTLY_MXFP4_MOE
  EXPECT_TRUE(is_writable_type(T::kMXFP4));
}

TEST(QuantMixMoe, OtherMixturesOnQwen3_30B_A3B) {
  const ModelConfig cfg = preset("qwen3-30b-a3b");
  auto q3m = *choose_moe(cfg, QuantMix::kQ3_K_M), q2 = *choose_moe(cfg, QuantMix::kQ2_K),
       q4s = *choose_moe(cfg, QuantMix::kQ4_K_S), q80 = *choose_moe(cfg, QuantMix::kQ8_0);
  for (int64_t l = 0; l < 48; ++l) {
    SCOPED_TRACE(l);
    EXPECT_EQ(q3m[blk(l, "ffn_down_exps")].type, l < 3 ? T::kQ5_K : T::kQ4_K);  // 600-603: 48 / 16 = 3
    EXPECT_EQ(q3m[blk(l, "attn_v")].type, l < 2 ? T::kQ5_K : T::kQ4_K);         // 549-550
    EXPECT_EQ(q3m[blk(l, "attn_output")].type, T::kQ4_K);                      // 647
    EXPECT_EQ(q3m[blk(l, "ffn_up_exps")].type, T::kQ3_K);
    EXPECT_EQ(q2[blk(l, "attn_v")].type, T::kQ4_K);  // 534-535: n_gqa = 32 / 4 = 8 >= 4
    EXPECT_EQ(q2[blk(l, "ffn_down_exps")].type, T::kQ3_K);  // 593
    EXPECT_EQ(q2[blk(l, "attn_output")].type, T::kQ3_K);    // 645
    EXPECT_EQ(q2[blk(l, "ffn_gate_exps")].type, T::kQ2_K);
    EXPECT_EQ(q4s[blk(l, "ffn_down_exps")].type, l < 6 ? T::kQ5_K : T::kQ4_K);  // 624-626: 48 / 8
    EXPECT_EQ(q80[blk(l, "ffn_down_exps")].type, T::kQ8_0);
    EXPECT_FALSE(q80[blk(l, "ffn_gate_inp")].convert);
  }
}

// qwen2moe: the experts' and the shared expert's ffn_down both follow their layer's rule. The
// running counter (what a dense file gets) would count 32 ffn_down over 16 layers: layer l's
// tensors would be the (2l)-th and (2l+1)-th, and every one from layer 7 on (i >= 14) more-bits.
TEST(QuantMixMoe, SharedExpertFollowsItsLayer) {
  const ModelConfig cfg = qwen2moe_16();
  auto r = choose_moe(cfg, QuantMix::kQ4_K_M);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto& t = *r;
  // use_more_bits(i, 16): i < 2, i >= 14, (i - 2) % 3 == 2: 4, 7, 10, 13.
  const std::set<int64_t> more = {0, 1, 4, 7, 10, 13, 14, 15};
  for (int64_t l = 0; l < 16; ++l) {
    SCOPED_TRACE(l);
    const T hi = more.count(l) ? T::kQ6_K : T::kQ4_K;
    EXPECT_EQ(t[blk(l, "ffn_down_exps")].type, hi);
    EXPECT_EQ(t[blk(l, "ffn_down_shexp")].type, hi);
    EXPECT_EQ(t[blk(l, "attn_v")].type, hi);
    EXPECT_EQ(t[blk(l, "ffn_gate_shexp")].type, T::kQ4_K);
    EXPECT_EQ(t[blk(l, "ffn_up_shexp")].type, T::kQ4_K);
    EXPECT_FALSE(t[blk(l, "ffn_gate_inp_shexp")].convert);  // 1-D
    EXPECT_FALSE(t[blk(l, "ffn_gate_inp")].convert);
  }
  // The same tensors in a file without expert_count (n_expert = 0): llama.cpp's counter decides.
  ModelConfig dense_counted = cfg;
  dense_counted.n_expert = 0;
  auto c = choose_moe(dense_counted, QuantMix::kQ4_K_M, false, moe_tensors(cfg));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)[blk(1, "ffn_down_exps")].type, T::kQ4_K);   // i = 2: (2 - 2) % 3 = 0
  EXPECT_EQ((*c)[blk(1, "ffn_down_shexp")].type, T::kQ4_K);  // i = 3
  EXPECT_EQ((*c)[blk(2, "ffn_down_exps")].type, T::kQ6_K);   // i = 4: (4 - 2) % 3 = 2
  EXPECT_EQ((*c)[blk(8, "ffn_down_shexp")].type, T::kQ6_K);  // i = 17 >= 14
  EXPECT_EQ(t[blk(8, "ffn_down_shexp")].type, T::kQ4_K);     // layer 8: (8 - 2) % 3 = 0
}

// Mixtral (8 experts): attn_v and attn_k q8_0 in every mixture; attn_output q5_K in the low ones.
TEST(QuantMixMoe, EightExpertRules) {
  const ModelConfig cfg = mixtral();  // 32 layers, 32 / 8 heads
  // use_more_bits(i, 32): 0-3, 6, 9, ..., 27, 28-31 (as Llama-2-7B above).
  const std::set<int64_t> more = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
  struct Want {
    QuantMix mix;
    T attn_output;  // 637-643: q5_K for Q2_K, Q3_K_S, Q3_K_M, Q4_K_S, Q4_K_M; else untouched
    T ffn_up;       // the base type
  };
  const Want wants[] = {{QuantMix::kQ2_K, T::kQ5_K, T::kQ2_K},   {QuantMix::kQ3_K_S, T::kQ5_K, T::kQ3_K},
                        {QuantMix::kQ3_K_M, T::kQ5_K, T::kQ3_K}, {QuantMix::kQ3_K_L, T::kQ3_K, T::kQ3_K},
                        {QuantMix::kQ4_K_S, T::kQ5_K, T::kQ4_K}, {QuantMix::kQ4_K_M, T::kQ5_K, T::kQ4_K},
                        {QuantMix::kQ5_K_M, T::kQ5_K, T::kQ5_K}, {QuantMix::kQ6_K, T::kQ6_K, T::kQ6_K},
                        {QuantMix::kQ4_0, T::kQ4_0, T::kQ4_0},   {QuantMix::kQ8_0, T::kQ8_0, T::kQ8_0}};
  for (bool per_expert : {false, true}) {
    for (const auto& w : wants) {
      SCOPED_TRACE(std::string(quant_mix_info(w.mix).name) + (per_expert ? " per-expert tensors" : " 3-D"));
      auto r = choose_moe(cfg, w.mix, per_expert);
      ASSERT_TRUE(r.ok()) << r.status().message();
      auto& t = *r;
      for (int64_t l : {0, 5, 6, 17, 31}) {
        SCOPED_TRACE(l);
        EXPECT_EQ(t[blk(l, "attn_v")].type, T::kQ8_0);  // 565-569
        EXPECT_EQ(t[blk(l, "attn_k")].type, T::kQ8_0);  // 571-575
        EXPECT_EQ(t[blk(l, "attn_output")].type, w.attn_output);
        EXPECT_EQ(t[blk(l, "attn_q")].type, w.ffn_up);
        const std::string up = per_expert ? "blk." + std::to_string(l) + ".ffn_up.3.weight" : blk(l, "ffn_up_exps");
        EXPECT_EQ(t[up].type, w.ffn_up);
        // ffn_down by layer (590-633), also for old files with one tensor per expert: the
        // counter would pass 32 (all more-bits, i >= 28) after 4 layers of 8 experts.
        const std::string down =
            per_expert ? "blk." + std::to_string(l) + ".ffn_down.5.weight" : blk(l, "ffn_down_exps");
        T want_down = w.ffn_up;
        if (w.mix == QuantMix::kQ2_K) want_down = T::kQ3_K;
        if (w.mix == QuantMix::kQ3_K_M) want_down = l < 2 ? T::kQ5_K : T::kQ4_K;
        if (w.mix == QuantMix::kQ3_K_L) want_down = T::kQ5_K;
        if (w.mix == QuantMix::kQ4_K_S) want_down = l < 4 ? T::kQ5_K : T::kQ4_K;
        if ((w.mix == QuantMix::kQ4_K_M || w.mix == QuantMix::kQ5_K_M) && more.count(l)) want_down = T::kQ6_K;
        EXPECT_EQ(t[down].type, want_down);
      }
      EXPECT_EQ(t["output.weight"].type, w.mix == QuantMix::kQ8_0 ? T::kQ8_0 : T::kQ6_K);
    }
  }
}

// llama.cpp stops on an FFN tensor of an MoE model whose layer it cannot read (444-450).
TEST(QuantMixMoe, FfnTensorWithoutValidLayerIsAnError) {
  const ModelConfig cfg = preset("tiny-qwen3moe");
  auto descs = moe_tensors(cfg);
  descs.push_back({"ffn_down_exps.weight", {64, 64, 8}, T::kF32});
  auto r = choose_moe(cfg, QuantMix::kQ4_K_M, false, descs);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ffn_down_exps.weight"), std::string::npos) << r.status().message();
  descs.back().name = "blk.7.ffn_up_exps.weight";  // 2 layers
  r = choose_moe(cfg, QuantMix::kQ4_K_M, false, descs);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("layer 7"), std::string::npos) << r.status().message();
  // Rules off (--pure, float mixtures): nothing asks for the layer, as in llama.cpp.
  MixOptions opt;
  opt.mix = QuantMix::kQ4_K_M;
  opt.pure = true;
  EXPECT_TRUE(choose_tensor_types(descs, mix_model_of(cfg), opt).ok());
  opt.pure = false;
  opt.mix = QuantMix::kF16;
  EXPECT_TRUE(choose_tensor_types(descs, mix_model_of(cfg), opt).ok());
}

TEST(QuantMixMoe, ExpertStacksAreQuantizableRoutersAreNot) {
  const uint64_t stack[] = {2048, 768, 128}, router[] = {2048, 128}, vec[] = {2048};
  EXPECT_TRUE(tensor_is_quantizable("blk.0.ffn_gate_exps.weight", stack));
  EXPECT_TRUE(tensor_is_quantizable("blk.0.ffn_down_exps.weight", stack));
  EXPECT_FALSE(tensor_is_quantizable("blk.0.ffn_gate_inp.weight", router));
  EXPECT_FALSE(tensor_is_quantizable("blk.0.ffn_gate_inp_shexp.weight", vec));
  // Row length 64 (tiny-qwen3moe): q4_K falls back to q5_0, like any other tensor (tensor_type_fallback).
  auto t = *choose_moe(preset("tiny-qwen3moe"), QuantMix::kQ4_K_M);
  EXPECT_EQ(t[blk(0, "ffn_gate_exps")].wanted, T::kQ4_K);
  EXPECT_EQ(t[blk(0, "ffn_gate_exps")].type, T::kQ5_0);
  // 2 layers: use_more_bits(1, 2) (1 >= 7 * 2 / 8), not layer 0: q6_K -> q8_0 and q4_K -> q5_0.
  EXPECT_EQ(t[blk(1, "ffn_down_exps")].type, T::kQ8_0);
  EXPECT_EQ(t[blk(0, "ffn_down_exps")].type, T::kQ5_0);
}

// The single-tensor entry (synth, roofline) answers for every MoE tensor what the whole-file plan
// gives, routers and 1-D tensors included (f32: llama.cpp leaves them as converted).
TEST(QuantMixMoe, StandardTensorTypeAgreesWithWholeFilePlan) {
  std::vector<ModelConfig> cfgs = {preset("tiny-qwen3moe"), preset("tiny-qwen2moe"), preset("qwen3-30b-a3b"),
                                   qwen2moe_16(), mixtral()};
  for (const auto& cfg : cfgs) {
    for (const auto& info : quant_mixes()) {
      const auto descs = moe_tensors(cfg);
      auto t = choose_moe(cfg, info.mix);
      ASSERT_TRUE(t.ok()) << t.status().message();
      for (const auto& d : descs) {
        const T want = (*t)[d.name].convert ? (*t)[d.name].type : T::kF32;
        EXPECT_EQ(standard_tensor_type(info.mix, cfg, d.name, d.shape[0]), want)
            << cfg.name << " " << info.name << " " << d.name;
      }
    }
  }
}

// The roofline's per-role types of an MoE config come from the same rules.
TEST(QuantMixMoe, CostModelUsesTheRules) {
  const ModelConfig cfg = preset("qwen3-30b-a3b");
  auto km = weight_types_by_name("q4_k_m", cfg);
  ASSERT_TRUE(km.ok());
  EXPECT_EQ((*km)(TensorRole::kFfnDownExps, 5), T::kQ6_K);  // first eighth
  EXPECT_EQ((*km)(TensorRole::kFfnDownExps, 6), T::kQ4_K);
  EXPECT_EQ((*km)(TensorRole::kFfnDownExps, 8), T::kQ6_K);  // (8 - 6) % 3 == 2
  EXPECT_EQ((*km)(TensorRole::kFfnGateExps, 8), T::kQ4_K);
  EXPECT_EQ((*km)(TensorRole::kFfnGateInp, 8), T::kF32);
  EXPECT_EQ((*km)(TensorRole::kOutput, -1), T::kQ6_K);
  auto mx = weight_types_by_name("q4_k_m", mixtral());
  ASSERT_TRUE(mx.ok());
  EXPECT_EQ((*mx)(TensorRole::kAttnV, 7), T::kQ8_0);
  EXPECT_EQ((*mx)(TensorRole::kAttnK, 7), T::kQ8_0);
  EXPECT_EQ((*mx)(TensorRole::kAttnO, 7), T::kQ5_K);
}

// Gemma 4's per-layer embeddings as llama-quantize treats them (llama-quant.cpp: the table is in
// the token-embedding category, so a tied model gives it the output head's q6_K; the projection
// per_layer_model_proj is never quantized).
TEST(QuantMix, Gemma4PerLayerEmbeddings) {
  ModelConfig cfg = preset("tiny-gemma4");  // tied embeddings
  const uint64_t cols = 7 * 256;
  EXPECT_EQ(standard_tensor_type(QuantMix::kQ4_K_M, cfg, "per_layer_token_embd.weight", cols), T::kQ6_K);
  EXPECT_EQ(standard_tensor_type(QuantMix::kQ4_K_M, cfg, "token_embd.weight", cols), T::kQ6_K);
  EXPECT_EQ(standard_tensor_type(QuantMix::kQ4_K_M, cfg, "per_layer_model_proj.weight", 256), T::kF32);
  cfg.tied_embeddings = false;
  EXPECT_EQ(standard_tensor_type(QuantMix::kQ4_K_M, cfg, "per_layer_token_embd.weight", cols), T::kQ4_K);
}

}  // namespace
}  // namespace ridge::offline
