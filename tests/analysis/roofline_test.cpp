#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/roofline.h"
#include "model/config.h"

namespace ridge::analysis {
namespace {

model::ModelCost cost_of(const char* preset, const char* type) {
  auto cfg = *model::preset_config(preset);
  return *model::model_cost(cfg, *model::weight_types_by_name(type, cfg), model::KvType::kF16);
}

Hardware hw(const char* name) { return *find_hardware(name, {}, std::nullopt); }

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
