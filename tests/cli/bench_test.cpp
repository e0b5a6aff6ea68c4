// ridge bench end to end: a tiny synthetic model, batch 1,2, a tiny context; valid JSON with
// every field and no fraction above 100%.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

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
