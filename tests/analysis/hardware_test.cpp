#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "analysis/hardware.h"
#include "analysis/probe.h"

namespace ridge::analysis {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  auto path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(HardwareTest, TableHasTheIssueDevicesWithSources) {
  for (const char* name : {"h100", "h200", "b200", "a100", "l4", "rtx4090", "rtx3090",
                           "agx-orin-64gb", "m2-ultra"}) {
    auto hw = find_hardware(name, {}, std::nullopt);
    ASSERT_TRUE(hw.ok()) << name << ": " << hw.status().message();
    EXPECT_GT(hw->bandwidth_gbs, 0) << name;
    EXPECT_GT(hw->bf16_tflops, 0) << name;
    EXPECT_GT(hw->memory_gb, 0) << name;
    EXPECT_FALSE(hw->source.empty()) << name;
  }
  // Datasheet figures the issue quotes.
  auto h100 = *find_hardware("H100", {}, std::nullopt);
  EXPECT_EQ(h100.bandwidth_gbs, 3350);
  EXPECT_EQ(h100.bf16_tflops, 989);
  EXPECT_EQ(h100.fp8_tflops, 1979);
  EXPECT_EQ(h100.memory_gb, 80);
  EXPECT_EQ(find_hardware("h200", {}, std::nullopt)->memory_gb, 141);
  EXPECT_EQ(find_hardware("b200", {}, std::nullopt)->bandwidth_gbs, 8000);
  EXPECT_EQ(find_hardware("a100", {}, std::nullopt)->bf16_tflops, 312);
  EXPECT_EQ(find_hardware("l4", {}, std::nullopt)->bandwidth_gbs, 300);
  EXPECT_EQ(find_hardware("orin", {}, std::nullopt)->bandwidth_gbs, 204.8);
  EXPECT_EQ(find_hardware("m2-ultra", {}, std::nullopt)->bandwidth_gbs, 800);
  EXPECT_EQ(find_hardware("a100", {}, std::nullopt)->peak_flops(Precision::kFP8), 0);
}

TEST(HardwareTest, UnknownAndLocalWithoutProbe) {
  auto bad = find_hardware("tpu9", {}, std::nullopt);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().is_usage());
  EXPECT_NE(bad.status().message().find("h100-sxm"), std::string::npos);
  auto local = find_hardware("local", {}, std::nullopt);
  ASSERT_FALSE(local.ok());
  EXPECT_NE(local.status().message().find("ridge probe"), std::string::npos);
}

TEST(HardwareTest, LocalFromProbeUsesTheHigherPeak) {
  ProbeResult p;
  p.cpu_model = "Test CPU";
  p.read_gbs = 40;
  p.f32_gflops_1t = 100;
  p.f32_gflops = 80;  // a busy machine: the all-thread run came out lower
  p.int8_gops = 400;
  p.memory_gb = 64;
  Hardware hw = *find_hardware("local", {}, p);
  EXPECT_EQ(hw.kind, "cpu");
  EXPECT_DOUBLE_EQ(hw.bandwidth_gbs, 40);
  EXPECT_DOUBLE_EQ(hw.peak_flops(Precision::kF32), 100e9);
  EXPECT_DOUBLE_EQ(hw.ridge(Precision::kINT8), 10.0);
}

TEST(HardwareTest, HardwareFileAddsAndOverrides) {
  auto path = write_temp("ridge_hw_test.json", R"({"hardware": [
    {"name": "MI300X", "bandwidth_gbs": 5300, "bf16_tflops": 1307, "fp8_tflops": 2615,
     "memory_gb": 192, "source": "AMD Instinct MI300X datasheet"},
    {"name": "h100", "bandwidth_gbs": 3000, "bf16_tflops": 900}]})");
  auto extra = load_hardware_file(path);
  ASSERT_TRUE(extra.ok()) << extra.status().message();
  ASSERT_EQ(extra->size(), 2u);
  auto mi = *find_hardware("mi300x", *extra, std::nullopt);
  EXPECT_DOUBLE_EQ(mi.ridge(Precision::kBF16), 1307e12 / 5300e9);
  EXPECT_EQ(find_hardware("h100", *extra, std::nullopt)->bandwidth_gbs, 3000);
  std::remove(path.c_str());
}

TEST(HardwareTest, HardwareFileErrorsNameTheProblem) {
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"not json", "not valid JSON"},
      {R"({"gpus": []})", "array 'hardware'"},
      {R"({"hardware": [{"bandwidth_gbs": 1}]})", "'name'"},
      {R"({"hardware": [{"name": "x", "bf16_tflops": 1}]})", "bandwidth_gbs"},
      {R"({"hardware": [{"name": "x", "bandwidth_gbs": "fast", "bf16_tflops": 1}]})", "not a number"},
      {R"({"hardware": [{"name": "x", "bandwidth_gbs": -1, "bf16_tflops": 1}]})", ">= 0"},
      {R"({"hardware": [{"name": "x", "bandwidth_gbs": 10}]})", "at least one"},
  };
  for (const auto& c : cases) {
    auto path = write_temp("ridge_hw_bad.json", c.text);
    auto r = load_hardware_file(path);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
    std::remove(path.c_str());
  }
  EXPECT_FALSE(load_hardware_file("/nonexistent/ridge_hw.json").ok());
}

}  // namespace
}  // namespace ridge::analysis
