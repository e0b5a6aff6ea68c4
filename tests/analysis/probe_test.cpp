#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "analysis/probe.h"
#include "base/cpu_features.h"

namespace ridge::analysis {
namespace {

std::string temp_dir(const char* name) {
  auto d = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(d);
  return d.string();
}

ProbeResult sample(const std::string& cpu, double read) {
  ProbeResult r;
  r.cpu_model = cpu;
  r.n_cpus = 4;
  r.isa = "avx2";
  r.n_threads = 4;
  r.read_gbs = read;
  r.copy_gbs = read * 0.9;
  r.bandwidth = {{1, read / 2, read / 3, "1 stream", "plain stores"},
                 {4, read, read * 0.9, "4 streams + prefetch 1 KiB", "streaming stores"}};
  r.read_loop = "4 streams + prefetch 1 KiB";
  r.copy_loop = "streaming stores";
  r.read_loops = {{"1 stream", read * 0.8}, {"4 streams + prefetch 1 KiB", read}};
  r.copy_loops = {{"plain stores", read * 0.6}, {"streaming stores", read * 0.9}};
  r.f32_gflops = 123;
  r.measured_at = "2026-01-01T00:00:00Z";
  return r;
}

TEST(ProbeTest, ThreadCounts) {
  EXPECT_EQ(probe_thread_counts(1), (std::vector<int>{1}));
  EXPECT_EQ(probe_thread_counts(6), (std::vector<int>{1, 2, 4, 6}));
  EXPECT_EQ(probe_thread_counts(8), (std::vector<int>{1, 2, 4, 8}));
}

TEST(ProbeTest, Median) {
  EXPECT_EQ(probe_median({}), 0);
  EXPECT_EQ(probe_median({5}), 5);
  EXPECT_EQ(probe_median({3, 1, 2}), 2);
  EXPECT_EQ(probe_median({4, 1, 100, 2}), 3);  // mean of the two middle values
}

TEST(ProbeTest, EntriesOfTheOldPlainLoopProbeAreNotLoaded) {
  // Version 1 measured one plain read loop and read low: its figures are re-measured, not used.
  std::string dir = temp_dir("ridge_probe_version_test");
  std::filesystem::create_directories(dir);
  std::string path = dir + "/probe.json";
  nlohmann::json e = probe_to_json(sample("CPU A", 25));
  e.erase("probe_version");
  std::ofstream(path) << nlohmann::json{{"schema", 1}, {"machines", {e}}}.dump();
  EXPECT_FALSE(load_probe(path, "CPU A", 4).has_value());
  e["probe_version"] = 1;
  std::ofstream(path) << nlohmann::json{{"schema", 1}, {"machines", {e}}}.dump();
  EXPECT_FALSE(load_probe(path, "CPU A", 4).has_value());
  // Version 3's L1 variant prefetched 2 KiB ahead, the kernels now 4 KiB: re-measured too.
  e["probe_version"] = 3;
  std::ofstream(path) << nlohmann::json{{"schema", 1}, {"machines", {e}}}.dump();
  EXPECT_FALSE(load_probe(path, "CPU A", 4).has_value());
  ASSERT_TRUE(save_probe(sample("CPU A", 30), path).ok());
  auto a = load_probe(path, "CPU A", 4);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->read_gbs, 30);
  EXPECT_EQ(a->read_loop, "4 streams + prefetch 1 KiB");
  ASSERT_EQ(a->read_loops.size(), 2u);
  EXPECT_EQ(a->read_loops[1].gbs, 30);
  EXPECT_EQ(a->bandwidth[1].copy_loop, "streaming stores");
  std::filesystem::remove_all(dir);
}

TEST(ProbeTest, CacheKeepsOneEntryPerCpu) {
  std::string dir = temp_dir("ridge_probe_cache_test");
  std::string path = dir + "/ridge/probe.json";
  EXPECT_FALSE(load_probe(path, "CPU A", 4).has_value());
  ASSERT_TRUE(save_probe(sample("CPU A", 10), path).ok());
  ASSERT_TRUE(save_probe(sample("CPU B", 20), path).ok());
  ASSERT_TRUE(save_probe(sample("CPU A", 30), path).ok());  // replaces A's entry
  auto a = load_probe(path, "CPU A", 4);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->read_gbs, 30);
  EXPECT_EQ(a->bandwidth.size(), 2u);
  EXPECT_EQ(a->f32_gflops, 123);
  EXPECT_EQ(load_probe(path, "CPU B", 4)->read_gbs, 20);
  EXPECT_FALSE(probe_was_busy(*a));
  ProbeResult busy = sample("CPU C", 10);
  busy.load_avg = 3.0;  // on 4 CPUs
  ASSERT_TRUE(save_probe(busy, path).ok());
  auto c = load_probe(path, "CPU C", 4);
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(probe_was_busy(*c));
  EXPECT_NE(format_probe(*c).find("busy"), std::string::npos);
  EXPECT_FALSE(load_probe(path, "CPU A", 8).has_value());  // other CPU count: other machine
  std::filesystem::remove_all(dir);
}

TEST(ProbeTest, DamagedCacheIsIgnored) {
  std::string dir = temp_dir("ridge_probe_damaged_test");
  std::filesystem::create_directories(dir);
  std::string path = dir + "/probe.json";
  std::ofstream(path) << "{\"machines\": [{\"cpu_model\": \"CPU A\", \"n_cpus\": 4}]";
  EXPECT_FALSE(load_probe(path, "CPU A", 4).has_value());
  std::ofstream(path) << "{\"machines\": [{\"cpu_model\": \"CPU A\", \"n_cpus\": 4, \"read_gbs\": \"x\"}]}";
  EXPECT_FALSE(load_probe(path, "CPU A", 4).has_value());
  ASSERT_TRUE(save_probe(sample("CPU A", 5), path).ok());  // a damaged file is rewritten
  EXPECT_EQ(load_probe(path, "CPU A", 4)->read_gbs, 5);
  std::filesystem::remove_all(dir);
}

TEST(ProbeTest, CachePathFollowsXdg) {
  const char* old = std::getenv("XDG_CACHE_HOME");
  std::string saved = old ? old : "";
  setenv("XDG_CACHE_HOME", "/tmp/xdg-test", 1);
  EXPECT_EQ(probe_cache_path(), "/tmp/xdg-test/ridge/probe.json");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_TRUE(probe_cache_path().ends_with("/.cache/ridge/probe.json"));
  if (old) setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

TEST(ProbeTest, SmallRunMeasuresEveryAvailableLoop) {
  ProbeOptions opt;
  opt.buffer_bytes = 16u << 20;
  opt.max_threads = 2;
  opt.repetitions = 1;
  opt.compute_seconds = 0.005;
  auto r = run_probe(opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->bandwidth.size(), 2u);
  for (const auto& s : r->bandwidth) {
    EXPECT_GT(s.read_gbs, 0.1);
    EXPECT_GT(s.copy_gbs, 0.1);
    EXPECT_FALSE(s.read_loop.empty());
    EXPECT_FALSE(s.copy_loop.empty());
  }
  // Every variant was timed at the most threads; the best of them is that count's figure, and
  // the overall figure is the best over thread counts.
  ASSERT_GE(r->read_loops.size(), 4u);
  ASSERT_GE(r->copy_loops.size(), 2u);
  double best_read = 0, best_copy = 0;
  for (const auto& l : r->read_loops) {
    EXPECT_GT(l.gbs, 0.1) << l.loop;
    best_read = std::max(best_read, l.gbs);
  }
  for (const auto& l : r->copy_loops) best_copy = std::max(best_copy, l.gbs);
  EXPECT_EQ(r->bandwidth.back().read_gbs, best_read);
  EXPECT_EQ(r->bandwidth.back().copy_gbs, best_copy);
  EXPECT_EQ(r->read_gbs, std::max(r->bandwidth[0].read_gbs, r->bandwidth[1].read_gbs));
  EXPECT_FALSE(r->read_loop.empty());
  const auto& f = cpu_features();
  if (f.has_avx2_set()) {
    EXPECT_GT(r->f32_gflops_1t, 1.0);
    EXPECT_GT(r->int8_gops_1t, 1.0);
  }
  if (r->isa == "avx512" && f.avx512bf16) {
    EXPECT_GT(r->bf16_gflops_1t, 1.0);
  }
  auto back = probe_from_json(probe_to_json(*r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->read_gbs, r->read_gbs);
  EXPECT_EQ(back->read_loop, r->read_loop);
  EXPECT_EQ(back->read_loops.size(), r->read_loops.size());
  const std::string text = format_probe(*r);
  EXPECT_NE(text.find("read GB/s"), std::string::npos);
  EXPECT_NE(text.find("read loops at 2 threads"), std::string::npos);
  EXPECT_NE(text.find(r->read_loop), std::string::npos);
  EXPECT_FALSE(run_probe(ProbeOptions{100, 1, 1, 0.01, ""}).ok());  // buffer too small
  EXPECT_FALSE(run_probe(ProbeOptions{16u << 20, 1, 1, 0.01, "sse9"}).ok());
}

}  // namespace
}  // namespace ridge::analysis
