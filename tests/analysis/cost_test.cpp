// Cost model against independent figures: published parameter counts, llama-bench file sizes,
// a real GGUF tensor table, and the closed forms of the accounting rules.
#include <gtest/gtest.h>

#include <cstring>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/config.h"
#include "model/cost.h"

namespace ridge::model {
namespace {

ModelCost cost_of(const char* preset, const char* type, KvType kv = KvType::kF16) {
  auto cfg = preset_config(preset);
  EXPECT_TRUE(cfg.ok()) << cfg.status().message();
  auto fn = weight_types_by_name(type, *cfg);
  EXPECT_TRUE(fn.ok()) << fn.status().message();
  auto m = model_cost(*cfg, *fn, kv);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return *m;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

TEST(CostTest, ParameterCountsMatchPublishedFigures) {
  // Llama-2-7b: 6,738,415,616 parameters (the exact count of the released checkpoint).
  EXPECT_EQ(cost_of("llama-2-7b", "f16").n_params, 6738415616.0);
  // Hugging Face model cards: Qwen3-8B 8.2B, Qwen3-4B 4.0B, Qwen2.5-7B 7.61B, Qwen3-0.6B 0.6B.
  EXPECT_NEAR(cost_of("qwen3-8b", "bf16").n_params / 1e9, 8.19, 0.03);
  EXPECT_NEAR(cost_of("qwen3-4b", "bf16").n_params / 1e9, 4.02, 0.03);
  EXPECT_NEAR(cost_of("qwen2.5-7b", "bf16").n_params / 1e9, 7.62, 0.03);
  EXPECT_NEAR(cost_of("qwen3-0.6b", "bf16").n_params / 1e9, 0.60, 0.02);
}

TEST(CostTest, Q4KMFileSizesMatchLlamaBench) {
  // llama-bench prints "llama 7B Q4_K - Medium 3.80 GiB" and "qwen2 7B Q4_K - Medium 4.36 GiB".
  EXPECT_NEAR(cost_of("llama-2-7b", "q4_k_m").weight_file_bytes / kGiB, 3.80, 0.04);
  EXPECT_NEAR(cost_of("qwen2.5-7b", "q4_k_m").weight_file_bytes / kGiB, 4.36, 0.05);
}

TEST(CostTest, F16BytesAreTwoPerParameter) {
  ModelCost m = cost_of("llama-2-7b", "f16");
  // Norms stay f32: 65 vectors of 4096 elements add 2 bytes each over f16.
  EXPECT_DOUBLE_EQ(m.weight_file_bytes, 2.0 * m.n_params + 2.0 * 65 * 4096);
  // A decode step reads everything but the embedding table, plus one embedding row.
  EXPECT_DOUBLE_EQ(m.weight_read_bytes, m.weight_file_bytes - 32000.0 * 4096 * 2);
  EXPECT_DOUBLE_EQ(m.embd_row_bytes, 4096.0 * 2);
}

TEST(CostTest, TiedEmbeddingsAreReadAsTheHead) {
  ModelCost m = cost_of("qwen3-4b", "bf16");
  // Tied: the only copy of the embedding matrix is streamed as the output head.
  EXPECT_NEAR(m.weight_read_bytes, m.weight_file_bytes, 1e6);
}

TEST(CostTest, KvBytesPerToken) {
  // Llama-2-7b f16: 2 (K,V) x 32 layers x 4096 x 2 bytes = 512 KiB per token.
  EXPECT_DOUBLE_EQ(cost_of("llama-2-7b", "f16").kv_bytes_per_token, 524288.0);
  // Qwen3-8B (GQA, 8 KV heads of 128): 2 x 36 x 1024 x 2 = 147456.
  EXPECT_DOUBLE_EQ(cost_of("qwen3-8b", "bf16").kv_bytes_per_token, 147456.0);
  EXPECT_DOUBLE_EQ(cost_of("qwen3-8b", "bf16", KvType::kFP8).kv_bytes_per_token, 73728.0);
  EXPECT_DOUBLE_EQ(cost_of("qwen3-8b", "bf16", KvType::kF32).kv_bytes_per_token, 294912.0);
  EXPECT_DOUBLE_EQ(cost_of("qwen3-8b", "bf16", KvType::kQ8_0).kv_bytes_per_token, 147456.0 / 2 * 34 / 32);
  EXPECT_FALSE(kv_type_from_name("q4_0").ok());
  EXPECT_EQ(*kv_type_from_name("FP8"), KvType::kFP8);
}

TEST(CostTest, DecodeStepClosedForm) {
  ModelCost m = cost_of("qwen3-8b", "bf16");
  const int64_t c = 2048, b = 5;
  StepCost s = cost_of_step(m, b, c);
  EXPECT_DOUBLE_EQ(s.weight_bytes, m.weight_read_bytes + b * m.embd_row_bytes);
  EXPECT_DOUBLE_EQ(s.kv_read_bytes, b * c * m.kv_bytes_per_token);
  EXPECT_DOUBLE_EQ(s.kv_write_bytes, b * m.kv_bytes_per_token);
  // 4 * n_layer * q_dim per attended position.
  EXPECT_DOUBLE_EQ(s.attention_flops, b * 4.0 * 36 * 4096 * c);
  EXPECT_DOUBLE_EQ(s.flops, b * m.flops_per_token(c));
  // Matmul FLOPs: 2 per weight applied (everything but the embedding table and norms).
  double matrix_params = m.n_params - 151936.0 * 4096 - (2 * 36 + 1) * 4096.0 - 2 * 36 * 128.0;
  EXPECT_DOUBLE_EQ(m.layer_flops_per_token + m.head_flops_per_row, 2.0 * matrix_params);
  // The general form agrees with the batch form.
  std::vector<SeqWork> seqs(b, SeqWork{c - 1, 1});
  StepCost g = cost_of_step(m, seqs);
  EXPECT_DOUBLE_EQ(g.bytes(), s.bytes());
  EXPECT_DOUBLE_EQ(g.flops, s.flops);
}

TEST(CostTest, PrefillAttentionIsTriangular) {
  ModelCost m = cost_of("tiny-llama", "f32");
  StepCost p = cost_of_prefill(m, 10);
  // Token i of 1..10 attends i positions: 55 in all.
  EXPECT_DOUBLE_EQ(p.attention_flops, m.attention_flops_per_position() * 55);
  EXPECT_DOUBLE_EQ(p.kv_write_bytes, 10 * m.kv_bytes_per_token);
  // Logits only for the last token: one head application.
  EXPECT_DOUBLE_EQ(p.flops, 10 * m.layer_flops_per_token + m.head_flops_per_row + p.attention_flops);
  EXPECT_EQ(cost_of_step(m, 0, 100).bytes(), 0.0);
}

TEST(CostTest, RowsNotDivisibleBySuperBlockFallBack) {
  // Qwen2.5-0.5B has n_embd 896 = 3.5 x 256: q4_K cannot store its rows, llama.cpp uses q5_0.
  auto cfg = *preset_config("qwen2.5-0.5b");
  ModelCost k = *model_cost(cfg, uniform_types(GgmlType::kQ4_K), KvType::kF16);
  // ffn_down rows are n_ff = 4864 = 19 x 256 long: those stay q4_K.
  auto expect = [](TensorRole role, int64_t) {
    if (role == TensorRole::kFfnDown) return GgmlType::kQ4_K;
    return uniform_types(GgmlType::kQ5_0)(role, 0);
  };
  ModelCost q50 = *model_cost(cfg, expect, KvType::kF16);
  EXPECT_DOUBLE_EQ(k.weight_file_bytes, q50.weight_file_bytes);
  EXPECT_FALSE(weight_types_by_name("q9_z", cfg).ok());
}

TEST(CostTest, Q4KMRuleBumpsHalfTheLayers) {
  auto cfg = *preset_config("llama-2-7b");
  auto fn = *weight_types_by_name("Q4_K_M", cfg);
  int bumped = 0;
  for (int64_t l = 0; l < 32; ++l) {
    EXPECT_EQ(fn(TensorRole::kAttnV, l), fn(TensorRole::kFfnDown, l));
    EXPECT_EQ(fn(TensorRole::kAttnQ, l), GgmlType::kQ4_K);
    bumped += fn(TensorRole::kAttnV, l) == GgmlType::kQ6_K;
  }
  EXPECT_EQ(bumped, 16);
  EXPECT_EQ(fn(TensorRole::kAttnV, 0), GgmlType::kQ6_K);   // first eighth
  EXPECT_EQ(fn(TensorRole::kAttnV, 31), GgmlType::kQ6_K);  // last eighth
  EXPECT_EQ(fn(TensorRole::kOutput, -1), GgmlType::kQ6_K);
  EXPECT_EQ(fn(TensorRole::kAttnNorm, 3), GgmlType::kF32);
}

TEST(CostTest, GgufTensorTableGivesTheFileBytes) {
  // A tiny-llama-shaped file with mixed types: the cost model must count exactly the bytes the
  // reader finds in the file.
  auto cfg = *preset_config("tiny-llama");
  gguf::Writer w;
  auto fill = [](std::span<uint8_t> d) {
    std::memset(d.data(), 0, d.size());
    return ok_status();
  };
  auto add = [&](const std::string& name, GgmlType t, std::vector<uint64_t> shape) {
    ASSERT_TRUE(w.add_tensor(name, t, std::move(shape), fill).ok()) << name;
  };
  const uint64_t e = 64, v = 512, q = 64, kv = 32, ff = 160;
  add("token_embd.weight", GgmlType::kQ8_0, {e, v});
  add("output.weight", GgmlType::kF16, {e, v});
  add("output_norm.weight", GgmlType::kF32, {e});
  for (int l = 0; l < 2; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", GgmlType::kF32, {e});
    add(p + "attn_q.weight", GgmlType::kQ8_0, {e, q});
    add(p + "attn_k.weight", GgmlType::kF16, {e, kv});
    add(p + "attn_v.weight", l == 0 ? GgmlType::kQ8_0 : GgmlType::kF32, {e, kv});
    add(p + "attn_output.weight", GgmlType::kQ8_0, {q, e});
    add(p + "ffn_norm.weight", GgmlType::kF32, {e});
    add(p + "ffn_gate.weight", GgmlType::kQ8_0, {e, ff});
    add(p + "ffn_up.weight", GgmlType::kBF16, {e, ff});
    add(p + "ffn_down.weight", GgmlType::kQ8_0, {ff, e});
  }
  auto bytes = w.write_to_memory();
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto file = gguf::File::parse(*bytes, "tiny.gguf");
  ASSERT_TRUE(file.ok()) << file.status().message();
  double file_bytes = 0;
  for (const auto& t : file->tensors()) file_bytes += static_cast<double>(t.n_bytes);
  auto fn = weight_types_from_gguf(*file);
  ASSERT_TRUE(fn.ok()) << fn.status().message();
  EXPECT_EQ((*fn)(TensorRole::kAttnV, 1), GgmlType::kF32);
  ModelCost m = *model_cost(cfg, *fn, KvType::kF16);
  EXPECT_DOUBLE_EQ(m.weight_file_bytes, file_bytes);
  const auto* embd = file->find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_DOUBLE_EQ(m.weight_read_bytes, file_bytes - static_cast<double>(embd->n_bytes));
}

}  // namespace
}  // namespace ridge::model
