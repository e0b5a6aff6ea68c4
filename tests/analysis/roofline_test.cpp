#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/cost_test_util.h"
#include "analysis/roofline.h"
#include "model/config.h"
#include "offline/presets.h"
#include "offline/weight_types.h"

namespace ridge::analysis {
namespace {

using model::testing::cost_of;
using testing::hw;

TEST(RooflineTest, KneeSeparatesMemoryFromComputeBound) {
  RooflineQuery q{cost_of("qwen3-8b", "bf16"), "bf16", GgmlType::kBF16, hw("h100"), std::nullopt, 128,
                  {1}, 0};
  RooflineResult r = *analyze(q);
  ASSERT_TRUE(r.knee_batch.has_value());
  const int64_t k = *r.knee_batch;
  EXPECT_GT(k, 100);  // ~ridge / (2 FLOP/param / 2 bytes/param) reduced by KV traffic
  q.batches = {k - 1, k};
  RooflineResult r2 = *analyze(q);
  EXPECT_FALSE(r2.decode[0].compute_bound);
  EXPECT_TRUE(r2.decode[1].compute_bound);
  // Past the knee the aggregate ceiling is the compute roof: tokens/s = peak / FLOPs per token.
  EXPECT_NEAR(r2.decode[1].tok_s_total, r2.peak_flops / r2.flops_per_token, r2.decode[1].tok_s_total * 1e-9);
}

TEST(RooflineTest, LongContextDecodeNeverTurnsComputeBound) {
  // At 32k each sequence's KV (4.8 GB) dwarfs its 34 GFLOP: intensity per sequence ~7 < ridge.
  RooflineQuery q{cost_of("qwen3-8b", "bf16"), "bf16", GgmlType::kBF16, hw("h100"), std::nullopt, 32768,
                  {1, 1024}, 0};
  RooflineResult r = *analyze(q);
  EXPECT_FALSE(r.knee_batch.has_value());
  EXPECT_FALSE(r.decode[1].compute_bound);
  EXPECT_TRUE(r.prefill.compute_bound);  // a 32k prompt is thousands of FLOP per byte
}

TEST(RooflineTest, MemoryFit) {
  RooflineQuery q{cost_of("llama-2-7b", "f16"), "f16", GgmlType::kF16, hw("l4"), std::nullopt, 4096,
                  {1, 32}, 0};
  RooflineResult r = *analyze(q);
  // 24 GB - 13.48 GB of weights = 10.5 GB; 4096 tokens x 512 KiB = 2.15 GB per sequence: 4 fit.
  EXPECT_TRUE(r.weights_fit);
  EXPECT_EQ(r.max_sequences, 4);
  EXPECT_TRUE(r.decode[0].fits);
  EXPECT_FALSE(r.decode[1].fits);
  q.cost = cost_of("qwen3-8b", "f32");  // 32.8 GB of weights on a 24 GB card
  RooflineResult big = *analyze(q);
  EXPECT_FALSE(big.weights_fit);
  EXPECT_EQ(big.max_sequences, 0);
}

// Gemma 3 27B keeps a window of 1024 in 52 of its 62 layers (the engine's window space): at 32k a
// sequence keeps 10 layers x 32768 + 52 x 1024 positions of 2 x 16 KV heads x 128 x 2 bytes.
TEST(RooflineTest, SlidingWindowLayersKeepOnlyTheirWindow) {
  RooflineQuery q{cost_of("gemma-3-27b", "bf16"), "bf16", GgmlType::kBF16, hw("h100"), std::nullopt, 32768,
                  {1}, 0};
  RooflineResult r = *analyze(q);
  const double row = 2.0 * 16 * 128 * 2;
  EXPECT_DOUBLE_EQ(r.kv_bytes_per_token, 62 * row);
  EXPECT_DOUBLE_EQ(r.kv_window_bytes_per_token, 52 * row);
  EXPECT_DOUBLE_EQ(r.kv_bytes_full_at_context, 62 * row * 32768);
  EXPECT_DOUBLE_EQ(r.kv_bytes_at_context, 10 * row * 32768 + 52 * row * 1024);
  // 80 GB - 54 GB of weights: 8 sequences of 3.1 GB (1 of 16.6 GB keeping every position).
  EXPECT_EQ(r.max_sequences, 8);
  // A model whose every layer is windowed keeps every position (no global layers to pair with).
  model::ModelCost all = cost_of("gemma-3-27b", "bf16");
  all.kv_store_window += all.kv_store_full;
  all.kv_store_full = 0;
  EXPECT_DOUBLE_EQ(all.kv_bytes_kept(32768), 62 * row * 32768);
}

TEST(RooflineTest, PrecisionChoice) {
  Hardware cpu;
  cpu.name = "local";
  cpu.kind = "cpu";
  cpu.bandwidth_gbs = 40;
  cpu.f32_tflops = 1;
  cpu.int8_tops = 4;
  EXPECT_EQ(*choose_precision(cpu, GgmlType::kQ4_K, std::nullopt), Precision::kINT8);
  EXPECT_EQ(*choose_precision(cpu, GgmlType::kF16, std::nullopt), Precision::kF32);
  EXPECT_EQ(*choose_precision(cpu, GgmlType::kBF16, std::nullopt), Precision::kF32);  // no bf16 unit
  EXPECT_EQ(*choose_precision(hw("h100"), GgmlType::kQ4_K, std::nullopt), Precision::kBF16);
  EXPECT_EQ(*choose_precision(hw("h100"), GgmlType::kF16, Precision::kFP8), Precision::kFP8);
  EXPECT_FALSE(choose_precision(hw("a100"), GgmlType::kF16, Precision::kFP8).ok());
  RooflineQuery q{cost_of("tiny-llama", "f32"), "f32", GgmlType::kF32, hw("h100"), std::nullopt, 0, {1}, 0};
  EXPECT_FALSE(analyze(q).ok());  // context 0
  q.context = 16;
  q.batches = {0};
  EXPECT_FALSE(analyze(q).ok());
}

TEST(RooflineTest, JsonAndSvg) {
  std::vector<RooflineResult> rs;
  for (const char* h : {"h100", "orin"}) {
    RooflineQuery q{cost_of("qwen3-0.6b", "q8_0"), "q8_0", GgmlType::kQ8_0, hw(h), std::nullopt, 1024,
                    {1, 8, 64}, 0};
    rs.push_back(*analyze(q));
  }
  nlohmann::json j = roofline_to_json(rs);
  EXPECT_EQ(j["schema"], "ridge.roofline/1");
  ASSERT_EQ(j["results"].size(), 2u);
  const auto& r0 = j["results"][0];
  for (const char* key : {"model", "weight_type", "kv_type", "hardware", "precision", "context",
                          "weight_read_bytes", "kv_bytes_per_token", "flops_per_token",
                          "ridge_flop_per_byte", "prefill", "decode", "knee_batch", "memory"}) {
    EXPECT_TRUE(r0.contains(key)) << key;
  }
  EXPECT_EQ(r0["decode"].size(), 3u);
  EXPECT_EQ(r0["decode"][2]["batch"], 64);
  EXPECT_EQ(r0["decode"][0]["bound"], "memory");
  EXPECT_EQ(r0["hardware"]["name"], "h100-sxm");
  std::string svg = roofline_svg(rs);
  EXPECT_TRUE(svg.starts_with("<svg xmlns='http://www.w3.org/2000/svg'"));
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  EXPECT_NE(svg.find("h100-sxm bf16 ridge 295"), std::string::npos);
  std::string text = format_roofline(rs[0]);
  EXPECT_NE(text.find("knee"), std::string::npos);
  EXPECT_NE(text.find("decode"), std::string::npos);
}

// Qwen3-30B-A3B: the bytes of a decode step grow with the batch as E (1 - (1 - k/E)^B) experts
// per layer; the MoE is about 8x cheaper than a dense model of its size at batch 1 and loses
// that as soon as its batch touches most experts.
TEST(RooflineTest, MixtureOfExpertsReadsMoreExpertsWithBatch) {
  RooflineQuery q{cost_of("qwen3-30b-a3b", "q4_k_m"), "q4_k_m", GgmlType::kQ4_K, hw("h100"), std::nullopt, 256,
                  {1, 8, 32}, 0};
  RooflineResult r = *analyze(q);
  ASSERT_TRUE(r.moe.has_value());
  const auto& m = q.cost;
  const double expected[] = {8.0, 51.6199, 111.771};
  for (size_t i = 0; i < 3; ++i) {
    const PhasePoint& p = r.decode[i];
    EXPECT_NEAR(p.experts_per_layer, expected[i], 1e-3) << p.batch;
    EXPECT_NEAR(p.cost.weight_bytes, m.dense_read_bytes + p.experts_per_layer * m.expert_bytes_all_layers +
                                         static_cast<double>(p.batch) * m.embd_row_bytes, 1.0);
    EXPECT_LT(p.step_s, p.dense_step_s) << p.batch;
  }
  EXPECT_LT(r.decode[0].step_s / r.decode[0].dense_step_s, 0.2);  // ~1/8 of the weight bytes at batch 1
  EXPECT_GT(r.decode[2].step_s / r.decode[2].dense_step_s, 0.8);
  // Weight parity: the first B with dense + n(B) X >= 0.9 (dense + E X). The dense part (attention,
  // routers, head: 0.83 GB) is 6 experts' worth, so n(B) >= 0.9 E - 0.6 = 114.6: B = 35
  // ((15/16)^35 = 0.1045 <= 1 - 114.6/128 = 0.1047 < (15/16)^34 = 0.1114).
  ASSERT_TRUE(r.moe->weight_parity_batch.has_value());
  EXPECT_EQ(*r.moe->weight_parity_batch, 35);
  auto reads = [&](int64_t b) {
    return m.weight_bytes_for_experts(model::expected_distinct_experts(128, 8, static_cast<double>(b)));
  };
  EXPECT_LT(reads(34), 0.9 * r.moe->dense_read_bytes);
  EXPECT_GE(reads(35), 0.9 * r.moe->dense_read_bytes);
  EXPECT_DOUBLE_EQ(r.moe->dense_read_bytes, m.weight_bytes_for_experts(128));
  // Step parity (>= 90% of the dense step) starts near the weight parity and ends where the dense
  // model's 10x FLOPs make it compute-bound (at ctx 256: about 5.5 ms of weights over 50 us per
  // sequence of compute beyond its memory time, B ~ 110-130).
  ASSERT_TRUE(r.moe->step_parity_batch.has_value());
  ASSERT_TRUE(r.moe->step_parity_end_batch.has_value());
  const int64_t from = *r.moe->step_parity_batch, to = *r.moe->step_parity_end_batch;
  EXPECT_GT(from, 16);
  EXPECT_LT(from, 64);
  EXPECT_GT(to, 64);
  EXPECT_LT(to, 256);
  RooflineQuery at = q;
  at.batches = {from - 1, from, to - 1, to};
  RooflineResult r2 = *analyze(at);
  EXPECT_LT(r2.decode[0].step_s, 0.9 * r2.decode[0].dense_step_s);
  EXPECT_GE(r2.decode[1].step_s, 0.9 * r2.decode[1].dense_step_s);
  EXPECT_GE(r2.decode[2].step_s, 0.9 * r2.decode[2].dense_step_s);
  EXPECT_LT(r2.decode[3].step_s, 0.9 * r2.decode[3].dense_step_s);
  // With the model's own 10x fewer FLOPs it is memory-bound at every batch here (per sequence its
  // KV and activations outweigh 6 GFLOP); give it a short context and fp8 KV to see a knee found
  // on the nonlinear byte curve.
  EXPECT_FALSE(r.knee_batch.has_value());
  auto cfg = *offline::preset_config("qwen3-30b-a3b");
  RooflineQuery k{*model::model_cost(cfg, *offline::weight_types_by_name("q4_k_m", cfg), kv::KvType::kFP8),
                  "q4_k_m", GgmlType::kQ4_K, hw("h100"), std::nullopt, 16, {1}, 0};
  RooflineResult rk = *analyze(k);
  ASSERT_TRUE(rk.knee_batch.has_value());
  k.batches = {*rk.knee_batch - 1, *rk.knee_batch};
  RooflineResult r3 = *analyze(k);
  EXPECT_FALSE(r3.decode[0].compute_bound);
  EXPECT_TRUE(r3.decode[1].compute_bound);
  // Total and active figures reach the report.
  EXPECT_NEAR(r.n_params / 1e9, 30.5, 0.05);
  EXPECT_NEAR(r.moe->n_active_params / 1e9, 3.35, 0.01);
  nlohmann::json j = roofline_to_json({r});
  const auto& jr = j["results"][0];
  EXPECT_EQ(jr["moe"]["n_expert"], 128);
  EXPECT_EQ(jr["moe"]["weight_parity_batch"], 35);
  EXPECT_EQ(jr["moe"]["step_parity_batch"], from);
  EXPECT_NEAR(jr["decode"][1]["experts_per_layer"].get<double>(), 51.6199, 1e-3);
  EXPECT_TRUE(jr["decode"][2].contains("step_vs_dense"));
  const std::string text = format_roofline(r);
  EXPECT_NE(text.find("experts: 8 of 128 per token"), std::string::npos) << text;
  EXPECT_NE(text.find("stops being cheaper in weight reads at batch 35"), std::string::npos) << text;
  // A dense model has none of it.
  RooflineQuery dq{cost_of("qwen3-8b", "q4_k_m"), "q4_k_m", GgmlType::kQ4_K, hw("h100"), std::nullopt, 4096, {1}, 0};
  RooflineResult d = *analyze(dq);
  EXPECT_FALSE(d.moe.has_value());
  EXPECT_FALSE(roofline_to_json({d})["results"][0].contains("moe"));
  EXPECT_EQ(format_roofline(d).find("experts"), std::string::npos);
}

TEST(RooflineTest, CliJsonEndToEnd) {
  if (!std::filesystem::exists(RIDGE_BINARY)) GTEST_SKIP() << "ridge binary not built";
  auto out = (std::filesystem::temp_directory_path() / "ridge_roofline_cli.json").string();
  auto svg = (std::filesystem::temp_directory_path() / "ridge_roofline_cli.svg").string();
  std::string cmd = std::string(RIDGE_BINARY) + " roofline qwen3-8b --type bf16,q4_k_m --hw b200,l4 "
                    "--ctx 1024 --batch 1,16 --json --svg " + svg + " > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str());
  EXPECT_EQ(j["results"].size(), 4u);
  EXPECT_TRUE(std::filesystem::file_size(svg) > 1000);
  std::string bad = std::string(RIDGE_BINARY) + " roofline qwen3-8b --hw nosuch 2>/dev/null";
  EXPECT_EQ(WEXITSTATUS(std::system(bad.c_str())), 2);
  std::remove(out.c_str());
  std::remove(svg.c_str());
}

}  // namespace
}  // namespace ridge::analysis
