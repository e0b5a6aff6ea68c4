// ridge bench end to end: a tiny synthetic model, batch 1,2, a tiny context; valid JSON with
// every field and no fraction above 100%.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "analysis/probe.h"
#include "analysis/xml_lite.h"
#include "base/cpu_features.h"

namespace {

// Runs a shell command, returns stdout and sets the exit status.
std::string run(const std::string& cmd, int& status) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    status = -1;
    return out;
  }
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  status = pclose(p);
  return out;
}

TEST(BenchCli, TinySyntheticJson) {
  // A private probe cache with nothing in it and --no-probe: no roof, fractions are null. Any
  // fraction present must still be within [0, 1].
  const std::string cache =
      (std::filesystem::temp_directory_path() / ("ridge-bench-cli-" + std::to_string(getpid())))
          .string();
  int status = 0;
  const std::string out =
      run("XDG_CACHE_HOME=" + cache + " " + RIDGE_BINARY +
              " bench --synthetic tiny-qwen3:f32 --batch 1,2 --ctx 8 -n 3 -t 1 --no-probe --json",
          status);
  std::filesystem::remove_all(cache);
  ASSERT_EQ(status, 0) << out;
  const auto j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["schema"], "ridge.bench/1");
  ASSERT_EQ(j["results"].size(), 1u);
  // Read into huge pages unless the machine lacked the memory (then mapped, as with --mmap).
  const std::string memory = j["results"][0].value("weights_memory", "");
  EXPECT_TRUE(memory == "huge pages" || memory == "mapped") << memory;
  const auto& pts = j["results"][0]["points"];
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0]["batch"], 1);
  EXPECT_EQ(pts[1]["batch"], 2);
  for (const auto& p : pts) {
    EXPECT_EQ(p["context"], 8);
    for (const char* f : {"prompt_tok_s", "ttft_ms", "decode_tok_s", "step_ms",
                          "achieved_bytes_per_s", "achieved_flops_per_s"}) {
      EXPECT_GT(p[f].get<double>(), 0) << f;
    }
    for (const char* f : {"p50", "p90", "p99"}) EXPECT_GT(p["itl_ms"][f].get<double>(), 0) << f;
    for (const char* f : {"weight_bytes", "kv_read_bytes", "kv_write_bytes", "activation_bytes"}) {
      EXPECT_GT(p["step_cost"][f].get<double>(), 0) << f;
    }
    for (const char* f : {"bandwidth_fraction", "compute_fraction"}) {
      ASSERT_TRUE(p.contains(f)) << f;
      if (!p[f].is_null()) {
        EXPECT_LE(p[f].get<double>(), 1.0) << f;
      }
    }
    EXPECT_TRUE(p.contains("bound"));
    EXPECT_TRUE(p.contains("miscount"));
  }
}

// --paired-probe: a read pass after every decode step; each point carries the pass's median rate
// and the median of the steps' ratios to it, and the report names the loop.
TEST(BenchCli, PairedProbeInJson) {
  int status = 0;
  const std::string out = run(std::string(RIDGE_BINARY) +
                                  " bench --synthetic tiny-qwen3:f32 --batch 1 --ctx 8 -n 3 -t 2"
                                  " --no-probe --paired-probe --json",
                              status);
  ASSERT_EQ(status, 0) << out;
  const auto j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_FALSE(j["results"][0]["paired_probe_loop"].get<std::string>().empty());
  const auto& pp = j["results"][0]["points"][0]["paired_probe"];
  EXPECT_GT(pp["read_bytes_per_s"].get<double>(), 1e8);
  EXPECT_GT(pp["bandwidth_fraction"].get<double>(), 0);
}

// Polylines whose class list contains `cls`; their point counts.
std::vector<size_t> series_sizes(const ridge::testing::XmlElement& root, const std::string& cls) {
  std::vector<size_t> out;
  for (const auto* e : root.all("polyline")) {
    if (!e->has_class(cls)) continue;
    std::istringstream in(e->attr("points"));
    std::string pt;
    size_t n = 0;
    while (in >> pt) ++n;
    out.push_back(n);
  }
  return out;
}

TEST(BenchCli, SvgOfATinySweep) {
  // A private probe cache holding a generous roof for this CPU (1 TB/s: no point can exceed it),
  // so the charts carry the roof lines; two contexts x three batch sizes.
  const auto dir =
      std::filesystem::temp_directory_path() / ("ridge-bench-svg-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  ridge::analysis::ProbeResult probe;
  probe.cpu_model = ridge::cpu_features().model_name;
  probe.n_cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  probe.read_gbs = 1000;
  probe.f32_gflops = probe.f32_gflops_1t = 1e5;
  probe.int8_gops = probe.bf16_gflops = 1e5;
  ASSERT_TRUE(ridge::analysis::save_probe(probe, (dir / "ridge/probe.json").string()).ok());
  const std::string svg = (dir / "bench.svg").string();
  int status = 0;
  const std::string out = run("XDG_CACHE_HOME=" + dir.string() + " " + RIDGE_BINARY +
                                  " bench --synthetic tiny-qwen3:f32 --batch 1,2,4 --ctx 8,16 -n 2"
                                  " -t 1 --json --svg " + svg + " 2>/dev/null",
                              status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_FALSE(nlohmann::json::parse(out, nullptr, false).is_discarded());  // stdout stays JSON
  std::ifstream in(svg);
  std::stringstream ss;
  ss << in.rdbuf();
  std::filesystem::remove_all(dir);
  const std::string doc = ss.str();  // the parser keeps a view of it
  ridge::testing::XmlParser parser(doc);
  auto root = parser.parse();
  ASSERT_TRUE(root) << parser.error();
  EXPECT_EQ(root->name, "svg");
  for (const char* cls : {"tok-s", "tok-s-roof", "gbs", "itl-p50", "itl-p99", "pct-bw"}) {
    EXPECT_EQ(series_sizes(*root, cls), (std::vector<size_t>{3, 3})) << cls;
  }
  EXPECT_EQ(series_sizes(*root, "gbs-roof").size(), 1u);
  std::vector<std::string> texts;
  for (const auto* t : root->all("text")) texts.push_back(t->text);
  auto has = [&](const std::string& s) {
    return std::find(texts.begin(), texts.end(), s) != texts.end();
  };
  for (const char* t : {"decode throughput", "achieved bandwidth", "inter-token latency",
                        "fraction of the roof", "1", "2", "4", "probed read 1000.0 GB/s"}) {
    EXPECT_TRUE(has(t)) << t;
  }
  size_t x_labels = 0;
  for (const auto* t : root->all("text")) x_labels += t->attr("class") == "xlabel";
  EXPECT_EQ(x_labels, 4u);
  bool ctx8 = false, ctx16 = false;
  for (const auto& t : texts) {
    ctx8 = ctx8 || t.starts_with("ctx 8 ·");
    ctx16 = ctx16 || t.starts_with("ctx 16 ·");
  }
  EXPECT_TRUE(ctx8 && ctx16);
}

TEST(BenchCli, SvgToAnUnwritablePathFailsBeforeTheSweep) {
  int status = 0;
  run(std::string(RIDGE_BINARY) + " bench --synthetic tiny-qwen3:f32 --no-probe "
      "--svg /nonexistent-ridge-dir/x.svg 2>/dev/null", status);
  EXPECT_EQ(WEXITSTATUS(status), 1);
}

TEST(BenchCli, UsageErrors) {
  int status = 0;
  run(std::string(RIDGE_BINARY) + " bench 2>/dev/null", status);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  run(std::string(RIDGE_BINARY) + " bench --synthetic tiny-qwen3:f32 --batch 0 2>/dev/null", status);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  run(std::string(RIDGE_BINARY) + " bench -m x.gguf --compare-types q8_0,q4_0 2>/dev/null", status);
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

}  // namespace
