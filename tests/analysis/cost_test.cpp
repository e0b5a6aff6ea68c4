// Cost model against independent figures: published parameter counts, llama-bench file sizes,
// a real GGUF tensor table, and the closed forms of the accounting rules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/config.h"
#include "model/cost.h"
#include "offline/presets.h"
#include "offline/weight_types.h"
#include "cost_test_util.h"

namespace ridge::model {
namespace {

using testing::cost_of;

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
  EXPECT_DOUBLE_EQ(cost_of("qwen3-8b", "bf16", kv::KvType::kFP8).kv_bytes_per_token, 73728.0);
  EXPECT_DOUBLE_EQ(cost_of("qwen3-8b", "bf16", kv::KvType::kF32).kv_bytes_per_token, 294912.0);
  EXPECT_DOUBLE_EQ(cost_of("qwen3-8b", "bf16", kv::KvType::kQ8_0).kv_bytes_per_token, 147456.0 / 2 * 34 / 32);
  EXPECT_FALSE(kv::kv_type_from_name("q4_0").ok());
  EXPECT_EQ(*kv::kv_type_from_name("FP8"), kv::KvType::kFP8);
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

// Sliding-window layers read and attend to their window only: gpt-oss-20b has 12 of its 24
// layers on a window of 128, gemma-3-1b 22 of 26 on 512 (every sixth layer global).
TEST(CostTest, SlidingWindowLayersReadTheirWindowOnly) {
  ModelCost g = cost_of("gpt-oss-20b", "f16");
  EXPECT_EQ(g.window, 128);
  EXPECT_EQ(g.n_window_layers, 12);
  const double layer = g.kv_bytes_per_token / 24;  // one layer's K + V per position
  // Decode at position 4000: full layers 4001 positions, windowed layers 128.
  const SeqWork decode[] = {{4000, 1}};
  StepCost d = cost_of_step(g, decode);
  EXPECT_DOUBLE_EQ(d.kv_read_bytes, layer * (12 * 4001 + 12 * 128));
  EXPECT_DOUBLE_EQ(d.attention_flops, g.attention_flops_per_position() / 24 * (12 * 4001 + 12 * 128));
  // Below the window nothing is capped.
  const SeqWork early[] = {{50, 1}};
  EXPECT_DOUBLE_EQ(cost_of_step(g, early).kv_read_bytes, 51 * g.kv_bytes_per_token);
  // A chunk of 200 after 1000: windowed layers read the 127 positions before it and its own 200.
  const SeqWork late[] = {{1000, 200}};
  EXPECT_DOUBLE_EQ(cost_of_step(g, late).kv_read_bytes, layer * (12 * 1200 + 12 * 327));
  // A chunk of 200 after 10 reads all 210 positions in every layer; its tokens attend 11..128
  // (118 tokens), then 128 each (82 tokens) in windowed layers.
  const SeqWork chunk[] = {{10, 200}};
  StepCost c = cost_of_step(g, chunk);
  EXPECT_DOUBLE_EQ(c.kv_read_bytes, 210 * g.kv_bytes_per_token);
  const double capped = (11.0 + 128.0) * 118 / 2 + 82 * 128.0;
  const double full = 200 * 10 + 200 * 201 / 2.0;
  EXPECT_DOUBLE_EQ(c.attention_flops, g.attention_flops_per_position() / 24 * (12 * full + 12 * capped));
  ModelCost gemma = cost_of("gemma-3-1b", "f16");
  EXPECT_EQ(gemma.window, 512);
  EXPECT_EQ(gemma.n_window_layers, 22);
  // Dense models: unchanged.
  EXPECT_EQ(cost_of("qwen3-0.6b", "f16").n_window_layers, 0);
}

TEST(CostTest, RowsNotDivisibleBySuperBlockFallBack) {
  // Qwen2.5-0.5B has n_embd 896 = 3.5 x 256: q4_K cannot store its rows, llama.cpp uses q5_0.
  auto cfg = *offline::preset_config("qwen2.5-0.5b");
  ModelCost k = *model_cost(cfg, uniform_types(GgmlType::kQ4_K), kv::KvType::kF16);
  // ffn_down rows are n_ff = 4864 = 19 x 256 long: those stay q4_K.
  auto expect = [](TensorRole role, int64_t) {
    if (role == TensorRole::kFfnDown) return GgmlType::kQ4_K;
    return uniform_types(GgmlType::kQ5_0)(role, 0);
  };
  ModelCost q50 = *model_cost(cfg, expect, kv::KvType::kF16);
  EXPECT_DOUBLE_EQ(k.weight_file_bytes, q50.weight_file_bytes);
  EXPECT_FALSE(offline::weight_types_by_name("q9_z", cfg).ok());
}

TEST(CostTest, Q4KMRuleBumpsHalfTheLayers) {
  auto cfg = *offline::preset_config("llama-2-7b");
  auto fn = *offline::weight_types_by_name("Q4_K_M", cfg);
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
  auto cfg = *offline::preset_config("tiny-llama");
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
  ModelCost m = *model_cost(cfg, *fn, kv::KvType::kF16);
  EXPECT_DOUBLE_EQ(m.weight_file_bytes, file_bytes);
  const auto* embd = file->find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_DOUBLE_EQ(m.weight_read_bytes, file_bytes - static_cast<double>(embd->n_bytes));
}

// ---------------------------------------------------------------------------------------------
// Mixture of experts.

TEST(CostMoeTest, ExpectedDistinctExperts) {
  // One token reads exactly its k experts.
  EXPECT_EQ(expected_distinct_experts(128, 8, 1), 8.0);
  EXPECT_EQ(expected_distinct_experts(60, 4, 1), 4.0);
  EXPECT_EQ(expected_distinct_experts(128, 8, 0), 0.0);
  // Two tokens: 2k - k^2/E (the second token repeats each of the first one's k experts with
  // probability k/E): 16 - 64/128 = 15.5.
  EXPECT_NEAR(expected_distinct_experts(128, 8, 2), 15.5, 1e-12);
  // Eight tokens, by hand: (15/16)^2 = 0.87890625, ^4 = 0.7724761962890625,
  // ^8 = 0.59671900...; 128 * (1 - 0.596719) = 51.6199.
  EXPECT_NEAR(expected_distinct_experts(128, 8, 8), 51.6199, 1e-4);
  // Many tokens: every expert. 32 tokens already reach 111.8 of 128.
  EXPECT_NEAR(expected_distinct_experts(128, 8, 32), 111.771, 1e-3);
  EXPECT_NEAR(expected_distinct_experts(128, 8, 4096), 128.0, 1e-9);
  EXPECT_EQ(expected_distinct_experts(8, 8, 3), 8.0);  // k = E: every expert from the first token
  // Never above min(n * k, E), and increasing.
  double prev = 0;
  for (int n = 1; n <= 200; ++n) {
    const double x = expected_distinct_experts(128, 8, n);
    EXPECT_LE(x, std::min(8.0 * n, 128.0) + 1e-9) << n;
    EXPECT_GT(x, prev) << n;
    prev = x;
  }
}

// Qwen3-30B-A3B's model card: "Number of Parameters: 30.5B in total and 3.3B activated".
// Total: 2 x 151936 x 2048 (embedding, head) + 48 x (attention 18.87M + router 0.26M + 128
// experts x 4.72M) + norms = 30.532 B. Active: the same with 8 experts per layer = 3.353 B. The
// card's 3.3B is that figure rounded down: it counts the embedding table and the head (without
// the embedding, a lookup, 3.04 B would be the matmul parameters).
TEST(CostMoeTest, Qwen3_30B_A3B_TotalAndActiveParameters) {
  ModelCost m = cost_of("qwen3-30b-a3b", "bf16");
  EXPECT_NEAR(m.n_params / 1e9, 30.5, 0.05);
  EXPECT_NEAR(m.n_active_params / 1e9, 3.3, 0.06);
  const double expert = 3.0 * 768 * 2048;  // gate, up, down of one expert in one layer
  EXPECT_DOUBLE_EQ(m.expert_params, 48 * expert);
  EXPECT_DOUBLE_EQ(m.n_params - m.n_active_params, 48 * 120 * expert);
  // bf16 matrices, f32 routers and norms: one expert is 2 bytes per weight.
  EXPECT_DOUBLE_EQ(m.expert_bytes_all_layers, 2 * 48 * expert);
  ASSERT_EQ(m.expert_bytes.size(), 48u);
  EXPECT_DOUBLE_EQ(m.active_weight_bytes, m.weight_file_bytes - 120 * m.expert_bytes_all_layers);
  // FLOPs per token use 8 experts: attention matrices, router (f32, 128 x 2048) and 8 experts.
  const double attn = 2.0 * (4096.0 * 2048 + 2 * 512.0 * 2048 + 2048.0 * 4096);
  EXPECT_DOUBLE_EQ(m.layer_flops_per_token, 48 * (attn + 2.0 * 128 * 2048 + 8 * 2.0 * expert));
}

TEST(CostMoeTest, WeightBytesGrowWithBatchAsPredicted) {
  ModelCost m = cost_of("qwen3-30b-a3b", "q4_k_m");
  const double x = m.expert_bytes_all_layers;
  // Batch 1: the k = 8 experts, exactly.
  StepCost one = cost_of_step(m, 1, 1024);
  EXPECT_DOUBLE_EQ(one.weight_bytes, m.dense_read_bytes + 8 * x + m.embd_row_bytes);
  EXPECT_DOUBLE_EQ(m.weight_read_bytes, m.dense_read_bytes + 8 * x);
  // Batch 8 and 32: E (1 - (1 - k/E)^B) experts per layer.
  for (int64_t b : {8, 32}) {
    StepCost s = cost_of_step(m, b, 1024);
    const double experts = 128.0 * (1.0 - std::pow(1.0 - 8.0 / 128, static_cast<double>(b)));
    EXPECT_NEAR(s.weight_bytes, m.dense_read_bytes + experts * x + b * m.embd_row_bytes, 1.0) << b;
    EXPECT_DOUBLE_EQ(s.flops, b * one.flops) << b;  // FLOPs: k experts per token, linear in B
  }
  // A large batch reads every expert: everything but the embedding table (not tied).
  const double embd = 151936.0 * 2048 * 144 / 256;  // token_embd in q4_K: 144 bytes per 256
  EXPECT_NEAR(cost_of_step(m, 4096, 1024).weight_bytes - 4096 * m.embd_row_bytes, m.weight_file_bytes - embd, 1.0);
  // A prefill of n tokens reads the experts of n tokens.
  StepCost p = cost_of_prefill(m, 16);
  EXPECT_NEAR(p.weight_bytes, m.dense_read_bytes + expected_distinct_experts(128, 8, 16) * x + 16 * m.embd_row_bytes, 1.0);
  // The general form: all sequences' new tokens together.
  std::vector<SeqWork> seqs = {{100, 1}, {0, 7}};
  EXPECT_NEAR(cost_of_step(m, seqs).weight_bytes, m.weight_bytes_for_experts(expected_distinct_experts(128, 8, 8)) +
                                                       8 * m.embd_row_bytes, 1.0);
}

TEST(CostMoeTest, MeasuredExpertsReplaceThePrediction) {
  ModelCost m = cost_of("qwen3-30b-a3b", "q4_k_m");
  std::vector<SeqWork> seqs(4, SeqWork{10, 1});
  // The router's union per layer: 20 experts in every layer but layer 0 (6 more).
  std::vector<int64_t> read(48, 20);
  read[0] = 26;
  StepCost s = cost_of_step(m, seqs, read);
  double want = m.dense_read_bytes + 4 * m.embd_row_bytes;
  for (size_t l = 0; l < 48; ++l) want += static_cast<double>(read[l]) * m.expert_bytes[l];
  EXPECT_DOUBLE_EQ(s.weight_bytes, want);
  // Per-layer bytes differ (q6_K ffn_down in the more-bits layers): layer 0 > layer 6.
  EXPECT_GT(m.expert_bytes[0], m.expert_bytes[6]);
  // Everything but the weights is the predicted step's.
  StepCost pred = cost_of_step(m, seqs);
  EXPECT_DOUBLE_EQ(s.flops, pred.flops);
  EXPECT_DOUBLE_EQ(s.kv_read_bytes, pred.kv_read_bytes);
  // One value for every layer; 8 at batch 1 is the prediction.
  const int64_t eight = 8;
  SeqWork single{10, 1};
  EXPECT_NEAR(cost_of_step(m, std::span(&single, 1), std::span(&eight, 1)).weight_bytes,
              cost_of_step(m, std::span(&single, 1)).weight_bytes, 1e-3);
  // No measurement: the prediction.
  EXPECT_DOUBLE_EQ(cost_of_step(m, seqs, {}).weight_bytes, pred.weight_bytes);
}

TEST(CostMoeTest, SharedExpertIsReadEveryStep) {
  ModelCost m = cost_of("tiny-qwen2moe", "f32");  // 2 layers, 4 experts of 32, 2 used, shared 96
  const double d = 64;
  EXPECT_DOUBLE_EQ(m.expert_params, 2 * 3 * 32 * d);
  // Active: 2 of 4 experts; the shared expert (3 x 96 x 64 + its 64-gate) always.
  EXPECT_DOUBLE_EQ(m.n_params - m.n_active_params, 2 * 2 * 3 * 32 * d);
  const double shared_bytes = 4.0 * (3 * 96 * d + d);
  const double router_bytes = 4.0 * 4 * d;
  // Dense reads: the head (untied), norms, attention, routers and shared experts.
  const double attn = 4.0 * (64 * d + 2 * 32 * d + d * 64 + 64 + 2 * 32);  // q, k, v, o, biases
  const double norms = 4.0 * (2 * d);
  const double head = 4.0 * (512 * d + d);
  EXPECT_DOUBLE_EQ(m.dense_read_bytes, head + 2 * (attn + norms + router_bytes + shared_bytes));
  // The dense equivalent applies all 4 experts: 2 more per token and layer.
  StepCost moe = cost_of_step(m, 3, 16), dense = dense_equivalent_step(m, 3, 16);
  EXPECT_DOUBLE_EQ(dense.flops - moe.flops, 3 * 2 * 2.0 * m.expert_params);
  EXPECT_NEAR(dense.weight_bytes, m.dense_read_bytes + 4 * m.expert_bytes_all_layers + 3 * m.embd_row_bytes, 1e-6);
}

TEST(CostMoeTest, DenseModelsAreUnchanged) {
  ModelCost m = cost_of("qwen3-8b", "bf16");
  EXPECT_FALSE(m.is_moe());
  EXPECT_EQ(m.n_active_params, m.n_params);
  EXPECT_EQ(m.active_weight_bytes, m.weight_file_bytes);
  EXPECT_EQ(m.dense_read_bytes, m.weight_read_bytes);
  EXPECT_TRUE(m.expert_bytes.empty());
  const int64_t three[] = {3};
  std::vector<SeqWork> seqs(5, SeqWork{100, 1});
  EXPECT_EQ(cost_of_step(m, seqs, three).bytes(), cost_of_step(m, seqs).bytes());
  EXPECT_EQ(dense_equivalent_step(m, 5, 101).bytes(), cost_of_step(m, 5, 101).bytes());
}

// An MoE file's tensor table: the 3-D stacks' bytes counted exactly; ffn_gate/up asked of it give
// the experts' type (what picks the precision).
TEST(CostMoeTest, GgufTensorTableOfAnMoeFile) {
  auto cfg = *offline::preset_config("tiny-qwen3moe");  // 64 wide, 8 experts of 64, tied
  gguf::Writer w;
  auto fill = [](std::span<uint8_t> d) {
    std::memset(d.data(), 0, d.size());
    return ok_status();
  };
  auto add = [&](const std::string& name, GgmlType t, std::vector<uint64_t> shape) {
    ASSERT_TRUE(w.add_tensor(name, t, std::move(shape), fill).ok()) << name;
  };
  const uint64_t e = 64, v = 512, q = 128, kv = 64, hd = 32, ne = 8, ff = 64;
  add("token_embd.weight", GgmlType::kQ8_0, {e, v});
  add("output_norm.weight", GgmlType::kF32, {e});
  for (int l = 0; l < 2; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", GgmlType::kF32, {e});
    add(p + "attn_q.weight", GgmlType::kQ8_0, {e, q});
    add(p + "attn_k.weight", GgmlType::kQ8_0, {e, kv});
    add(p + "attn_v.weight", GgmlType::kQ8_0, {e, kv});
    add(p + "attn_q_norm.weight", GgmlType::kF32, {hd});
    add(p + "attn_k_norm.weight", GgmlType::kF32, {hd});
    add(p + "attn_output.weight", GgmlType::kQ8_0, {q, e});
    add(p + "ffn_norm.weight", GgmlType::kF32, {e});
    add(p + "ffn_gate_inp.weight", GgmlType::kF32, {e, ne});
    add(p + "ffn_gate_exps.weight", GgmlType::kQ5_0, {e, ff, ne});
    add(p + "ffn_up_exps.weight", GgmlType::kQ5_0, {e, ff, ne});
    add(p + "ffn_down_exps.weight", l == 0 ? GgmlType::kQ8_0 : GgmlType::kQ5_0, {ff, e, ne});
  }
  auto bytes = w.write_to_memory();
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto file = gguf::File::parse(*bytes, "tiny-moe.gguf");
  ASSERT_TRUE(file.ok()) << file.status().message();
  double file_bytes = 0;
  for (const auto& t : file->tensors()) file_bytes += static_cast<double>(t.n_bytes);
  auto fn = weight_types_from_gguf(*file);
  ASSERT_TRUE(fn.ok()) << fn.status().message();
  EXPECT_EQ((*fn)(TensorRole::kFfnDownExps, 0), GgmlType::kQ8_0);
  EXPECT_EQ((*fn)(TensorRole::kFfnGateInp, 1), GgmlType::kF32);
  EXPECT_EQ((*fn)(TensorRole::kFfnUp, 0), GgmlType::kQ5_0);  // no ffn_up: the experts' type
  EXPECT_EQ((*fn)(bulk_role(cfg), 0), GgmlType::kQ5_0);
  ModelCost m = *model_cost(cfg, *fn, kv::KvType::kF16);
  EXPECT_DOUBLE_EQ(m.weight_file_bytes, file_bytes);
  // One expert: 64 rows of q5_0 gate and up (44 bytes per 64), 64 rows of down (q8_0 68 / q5_0 44).
  EXPECT_DOUBLE_EQ(m.expert_bytes[0], 64.0 * (44 + 44 + 68));
  EXPECT_DOUBLE_EQ(m.expert_bytes[1], 64.0 * (44 + 44 + 44));
  EXPECT_DOUBLE_EQ(m.active_weight_bytes, file_bytes - 6 * m.expert_bytes_all_layers);
}

}  // namespace
}  // namespace ridge::model

namespace ridge::model {
namespace {

TEST(RoofTime, BytesOrFlopsWhicheverIsSlowerAndBytesWithoutARoof) {
  StepCost c;
  c.weight_bytes = 100;
  c.flops = 1000;
  EXPECT_DOUBLE_EQ(roof_time(c, 0, 0), 100.0);      // no roof: bytes
  EXPECT_DOUBLE_EQ(roof_time(c, 10, 0), 10.0);      // no compute roof: bytes / bandwidth
  EXPECT_DOUBLE_EQ(roof_time(c, 10, 500), 10.0);    // bandwidth-bound
  EXPECT_DOUBLE_EQ(roof_time(c, 10, 50), 20.0);     // compute-bound
}

}  // namespace
}  // namespace ridge::model
