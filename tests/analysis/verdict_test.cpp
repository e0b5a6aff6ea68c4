#include <gtest/gtest.h>

#include "analysis/verdict.h"

namespace ridge::analysis {
namespace {

ProbeResult probe_41() {
  ProbeResult p;
  p.cpu_model = "Test CPU";
  p.read_gbs = 41.0;
  p.f32_gflops = 500;
  return p;
}

TEST(VerdictTest, RunSummaryMatchesTheIssueExample) {
  // 30.4 GB/s at 47.9 tok/s: 634.65 MB per token.
  double bytes = 30.4e9 / 47.9;
  EXPECT_EQ(format_run_summary(bytes, 47.9, probe_41()),
            "decode 47.9 tok/s · 30.4 GB/s = 74% of 41.0 GB/s measured · bandwidth-bound");
}

TEST(VerdictTest, RunSummaryWithoutProbeAsksForOne) {
  std::string s = format_run_summary(1e9, 10.0, std::nullopt);
  EXPECT_EQ(s, "decode 10.0 tok/s · 10.0 GB/s · run `ridge probe` to measure this machine's bandwidth");
}

TEST(VerdictTest, NeverMoreThanTheRoof) {
  // 50 GB/s claimed on a 41 GB/s machine: a miscount, never "122%".
  std::string s = format_run_summary(5e9, 10.0, probe_41());
  EXPECT_NE(s.find("miscount"), std::string::npos) << s;
  EXPECT_EQ(s.find("122%"), std::string::npos) << s;
  EXPECT_EQ(s.find('%'), std::string::npos) << s;
}

TEST(VerdictTest, SlowStepIsOverheadBound) {
  std::string s = format_run_summary(1e9, 10.0, probe_41());  // 10 GB/s of 41: 24%
  EXPECT_NE(s.find("24% of 41.0 GB/s"), std::string::npos) << s;
  EXPECT_NE(s.find("overhead-bound"), std::string::npos) << s;
}

TEST(VerdictTest, JudgeStepPicksTheBindingRoofAndDominantCost) {
  model::StepCost c;
  c.weight_bytes = 9e9;
  c.kv_read_bytes = 1e9;
  c.flops = 1e12;
  // 10 GB at 100 GB/s = 0.1 s; 1 TFLOP at 100 TFLOP/s = 0.01 s: memory binds.
  Verdict v = judge_step(c, 0.125, 100e9, 100e12);
  EXPECT_EQ(v.bound, Bound::kBandwidth);
  EXPECT_DOUBLE_EQ(v.roof_fraction, 0.8);
  EXPECT_EQ(v.dominant, "weights 90% of bytes");
  EXPECT_DOUBLE_EQ(v.achieved_bytes_per_s, 80e9);

  c.flops = 2e13;  // 0.2 s of arithmetic
  c.attention_flops = 1.2e13;
  v = judge_step(c, 0.25, 100e9, 100e12);
  EXPECT_EQ(v.bound, Bound::kCompute);
  EXPECT_EQ(v.dominant, "attention 60% of FLOPs");

  v = judge_step(c, 1.0, 100e9, 100e12);  // 20% of roof
  EXPECT_EQ(v.bound, Bound::kOverhead);

  v = judge_step(c, 0.1, 100e9, 100e12);  // faster than 0.2 s of arithmetic allows
  EXPECT_EQ(v.bound, Bound::kMiscount);
  EXPECT_NE(v.text.find("FLOPs over-counted"), std::string::npos);

  v = judge_step(c, 0.0, 100e9, 100e12);
  EXPECT_EQ(v.bound, Bound::kOverhead);
}

}  // namespace
}  // namespace ridge::analysis
