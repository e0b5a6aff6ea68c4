#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "analysis/bench.h"
#include "analysis/read_pass.h"
#include "kernels/kernels.h"

namespace ridge::analysis {
namespace {

// A tiny-qwen3 f32 model in a temp file, loaded once for the suite.
class BenchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = (std::filesystem::temp_directory_path() /
             ("ridge-bench-test-" + std::to_string(getpid()) + ".gguf")).string();
    ASSERT_TRUE(write_synthetic_model("tiny-qwen3:f32", path_, 2).ok());
  }
  static void TearDownTestSuite() { std::filesystem::remove(path_); }

  static model::Model load() {
    auto m = model::Model::load(path_, kernels::kernels_for(kernels::best_isa()));
    EXPECT_TRUE(m.ok()) << m.status().message();
    return std::move(m).value();
  }
  static model::ModelCost cost_of(const model::Model& m) {
    auto types = model::weight_types_from_gguf(m.file());
    EXPECT_TRUE(types.ok());
    auto c = model::model_cost(m.config(), *types, kv::KvType::kF16);
    EXPECT_TRUE(c.ok());
    return *c;
  }
  static inline std::string path_;
};

TEST_F(BenchTest, TinySweepGivesJsonWithEveryFieldAndNoFractionAboveOne) {
  model::Model m = load();
  const model::ModelCost cost = cost_of(m);
  ThreadPool pool(2);
  BenchOptions opt;
  opt.n_decode = 4;
  // A generous roof (1 TB/s, 10 TFLOP/s): nothing a 2-core CPU runs can exceed it.
  BenchRoof roof{1e12, 1e13, "test"};
  BenchReport r;
  r.model = "tiny-qwen3";
  r.weight_type = "f32";
  r.roof = roof;
  for (int64_t b : {1, 2}) {
    auto p = bench_point(m, cost, b, 8, opt, roof, pool);
    ASSERT_TRUE(p.ok()) << p.status().message();
    r.points.push_back(*p);
  }
  ASSERT_EQ(r.points.size(), 2u);
  const BenchPoint& p1 = r.points[0];
  const BenchPoint& p2 = r.points[1];
  // The same weights stream once per step whatever the batch; KV traffic doubles.
  EXPECT_DOUBLE_EQ(p1.step.weight_bytes, cost.weight_read_bytes + cost.embd_row_bytes);
  EXPECT_GT(p2.step.weight_bytes, p1.step.weight_bytes);  // one more embedding row
  EXPECT_LT(p2.step.weight_bytes, p1.step.weight_bytes + 2 * cost.embd_row_bytes);
  EXPECT_DOUBLE_EQ(p2.step.kv_read_bytes, 2 * p1.step.kv_read_bytes);
  // Context 8, one warm-up step at position 8, then 4 timed steps at positions 9..12 attending
  // 10..13 positions: a mean of 11.5 rows of K and V per step.
  EXPECT_DOUBLE_EQ(p1.step.kv_read_bytes, 11.5 * cost.kv_bytes_per_token);

  const nlohmann::json j = nlohmann::json::parse(bench_to_json({r}, {}).dump());
  EXPECT_EQ(j["schema"], "ridge.bench/1");
  const auto& pts = j["results"][0]["points"];
  ASSERT_EQ(pts.size(), 2u);
  for (const auto& p : pts) {
    for (const char* f : {"batch", "context", "prompt_tok_s", "ttft_ms", "decode_tok_s", "itl_ms",
                          "step_cost", "achieved_bytes_per_s", "achieved_flops_per_s",
                          "bandwidth_fraction", "compute_fraction", "bound", "verdict",
                          "miscount"}) {
      EXPECT_TRUE(p.contains(f)) << f;
    }
    for (const char* f : {"weight_bytes", "kv_read_bytes", "kv_write_bytes", "activation_bytes"}) {
      EXPECT_GT(p["step_cost"][f].get<double>(), 0) << f;
    }
    EXPECT_GT(p["decode_tok_s"].get<double>(), 0);
    EXPECT_LE(p["itl_ms"]["p50"].get<double>(), p["itl_ms"]["p99"].get<double>());
    EXPECT_FALSE(p["miscount"].get<bool>());
    EXPECT_GT(p["bandwidth_fraction"].get<double>(), 0);
    EXPECT_LE(p["bandwidth_fraction"].get<double>(), 1.0);
    EXPECT_LE(p["compute_fraction"].get<double>(), 1.0);
  }
  EXPECT_EQ(format_bench_table(r).find("MISCOUNT"), std::string::npos);
}

// An MoE model: the step's weights count the experts the router really chose in each layer, and
// the report puts that union next to the uniform-routing prediction.
TEST(BenchMoe, StepCountsTheRoutersExperts) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("ridge-bench-moe-" + std::to_string(getpid()) + ".gguf")).string();
  ASSERT_TRUE(write_synthetic_model("tiny-qwen3moe:f32", path, 2).ok());
  auto m = model::Model::load(path, kernels::kernels_for(kernels::best_isa()));
  std::filesystem::remove(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto types = model::weight_types_from_gguf(m->file());
  ASSERT_TRUE(types.ok());
  auto cost = model::model_cost(m->config(), *types, kv::KvType::kF16);
  ASSERT_TRUE(cost.ok());
  ThreadPool pool(2);
  BenchOptions opt;
  opt.n_decode = 4;
  const BenchRoof roof{1e12, 1e13, "test"};
  BenchReport r;
  r.model = "tiny-qwen3moe";
  r.roof = roof;
  const model::ModelConfig& cfg = m->config();  // 2 of 8 experts per token
  for (int64_t b : {1, 4}) {
    auto p = bench_point(*m, *cost, b, 8, opt, roof, pool);
    ASSERT_TRUE(p.ok()) << p.status().message();
    r.points.push_back(*p);
  }
  const BenchPoint& p1 = r.points[0];
  const BenchPoint& p4 = r.points[1];
  // One token reads exactly its k experts per layer; four read between k and min(4k, E).
  EXPECT_DOUBLE_EQ(p1.experts_measured, static_cast<double>(cfg.n_expert_used));
  EXPECT_DOUBLE_EQ(p1.experts_predicted, static_cast<double>(cfg.n_expert_used));
  EXPECT_GE(p4.experts_measured, static_cast<double>(cfg.n_expert_used));
  EXPECT_LE(p4.experts_measured, static_cast<double>(cfg.n_expert));
  EXPECT_NEAR(p4.experts_predicted, 8.0 * (1.0 - std::pow(0.75, 4)), 1e-9);
  // Batch 1 reads the same bytes as the cost model's single-token step.
  EXPECT_DOUBLE_EQ(p1.step.weight_bytes, cost->weight_read_bytes + cost->embd_row_bytes);
  // Every layer holds experts of the same size here: the mean count times one expert per layer.
  EXPECT_NEAR(p4.step.weight_bytes - p1.step.weight_bytes,
              (p4.experts_measured - p1.experts_measured) * cost->expert_bytes_all_layers +
                  3 * cost->embd_row_bytes,
              1e-6 * p4.step.weight_bytes);
  const nlohmann::json j = nlohmann::json::parse(bench_to_json({r}, {}).dump());
  EXPECT_DOUBLE_EQ(j["results"][0]["points"][1]["experts_per_layer"]["measured"].get<double>(),
                   p4.experts_measured);
  EXPECT_NE(format_bench_table(r).find("measured (the router's union)"), std::string::npos);
}

// A roof far below what the run achieved: the bench must say miscount, never print >100%.
TEST_F(BenchTest, RoofBelowMeasurementIsFlaggedAsMiscount) {
  model::Model m = load();
  const model::ModelCost cost = cost_of(m);
  ThreadPool pool(1);
  BenchOptions opt;
  opt.n_decode = 2;
  BenchRoof roof{1e3, 1e3, "test: 1 kB/s"};
  auto p = bench_point(m, cost, 1, 4, opt, roof, pool);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->miscount);
  EXPECT_EQ(p->verdict.bound, Bound::kMiscount);
  EXPECT_LE(p->bandwidth_fraction, 1.0);
  BenchReport r;
  r.roof = roof;
  r.points.push_back(*p);
  const std::string table = format_bench_table(r);
  EXPECT_NE(table.find("MISCOUNT"), std::string::npos) << table;
  const nlohmann::json j = bench_to_json({r}, {});
  EXPECT_TRUE(j["results"][0]["points"][0]["bandwidth_fraction"].is_null());
  EXPECT_TRUE(j["results"][0]["points"][0]["miscount"].get<bool>());
}

// With a paired probe every timed step is followed by a read pass: the point carries the passes'
// median and the median of the steps' ratios, the table and JSON report them; without one the
// JSON field is null.
TEST_F(BenchTest, PairedProbeJudgesEachStepAgainstAReadPass) {
  model::Model m = load();
  const model::ModelCost cost = cost_of(m);
  ThreadPool pool(2);
  auto pass = ReadPass::create(pool, uint64_t{8} << 20, 1);
  ASSERT_TRUE(pass.ok()) << pass.status().message();
  BenchOptions opt;
  opt.n_decode = 5;
  BenchRoof roof{1e12, 1e13, "test"};
  auto paired = bench_point(m, cost, 1, 8, opt, roof, pool, &*pass);
  ASSERT_TRUE(paired.ok()) << paired.status().message();
  EXPECT_GT(paired->paired_read_bytes_per_s, 1e8);
  EXPECT_GT(paired->paired_fraction, 0);
  EXPECT_EQ(pass->last_sum(), static_cast<double>(pass->bytes() / sizeof(float)));
  auto plain = bench_point(m, cost, 1, 8, opt, roof, pool);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->paired_read_bytes_per_s, 0);
  EXPECT_EQ(plain->paired_fraction, 0);

  BenchReport r;
  r.roof = roof;
  r.points = {*paired};
  r.paired_loop = pass->loop_name();
  EXPECT_NE(format_bench_table(r).find("paired probe (a read pass of " + pass->loop_name()),
            std::string::npos);
  nlohmann::json j = bench_to_json({r}, {});
  EXPECT_EQ(j["results"][0]["paired_probe_loop"], pass->loop_name());
  EXPECT_DOUBLE_EQ(j["results"][0]["points"][0]["paired_probe"]["bandwidth_fraction"].get<double>(),
                   paired->paired_fraction);
  r.points = {*plain};
  r.paired_loop.clear();
  j = bench_to_json({r}, {});
  EXPECT_TRUE(j["results"][0]["points"][0]["paired_probe"].is_null());
  EXPECT_EQ(format_bench_table(r).find("paired probe"), std::string::npos);
}

// check_roof on a hand-built point: 10 GB moved in 1 s against a 5 GB/s roof is a miscount
// (bytes over-counted); 4 GB in 1 s is 80%.
TEST(BenchCheckRoof, TripsOnlyAboveTheRoof) {
  BenchRoof roof{5e9, 1e12, "test"};
  BenchPoint p;
  p.step.weight_bytes = 10e9;
  p.step.flops = 1e9;
  p.step_s = 1.0;
  p.verdict = judge_step(p.step, p.step_s, roof.bandwidth_bytes_per_s, roof.peak_flops);
  check_roof(p, roof);
  EXPECT_TRUE(p.miscount);
  EXPECT_DOUBLE_EQ(p.bandwidth_fraction, 1.0);  // clamped, and printed as MISCOUNT
  EXPECT_NE(p.miscount_reason.find("10.0 GB/s"), std::string::npos) << p.miscount_reason;

  p.step.weight_bytes = 4e9;
  p.verdict = judge_step(p.step, p.step_s, roof.bandwidth_bytes_per_s, roof.peak_flops);
  check_roof(p, roof);
  EXPECT_FALSE(p.miscount);
  EXPECT_DOUBLE_EQ(p.bandwidth_fraction, 0.8);
  EXPECT_DOUBLE_EQ(p.compute_fraction, 1e-3);
  EXPECT_EQ(p.verdict.bound, Bound::kBandwidth);
}

TEST(BenchCompare, SpeedRatioTrackingByteRatioIsBandwidthBound) {
  BenchReport a, b;
  BenchPoint pa, pb;
  pa.batch = pb.batch = 1;
  pa.context = pb.context = 128;
  pa.step.weight_bytes = 2e9;
  pb.step.weight_bytes = 1e9;
  pa.verdict.bound = pb.verdict.bound = Bound::kBandwidth;
  pa.decode_tok_s = 10;
  pb.decode_tok_s = 19;  // x1.9 for x2 fewer bytes
  a.points.push_back(pa);
  b.points.push_back(pb);
  auto c = compare_types(a, b);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_DOUBLE_EQ(c[0].byte_ratio, 2.0);
  EXPECT_DOUBLE_EQ(c[0].speed_ratio, 1.9);
  EXPECT_NE(c[0].verdict.find("bandwidth-bound"), std::string::npos);
  EXPECT_EQ(c[0].verdict.find("overhead"), std::string::npos);
  b.points[0].decode_tok_s = 11;  // x1.1: the byte saving barely helps
  c = compare_types(a, b);
  EXPECT_NE(c[0].verdict.find("not bandwidth-bound"), std::string::npos);
}

}  // namespace
}  // namespace ridge::analysis
