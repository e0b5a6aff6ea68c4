// `ridge quantize --target-kld`: the mixture it chooses measures at most the budget on the text
// (the figure it prints is re-measured here from the written file with ridge perplexity
// --kl-divergence), costs fewer bits than the ladder's top, and a budget below the top's own
// KLD, or one without a text, is refused in one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "run_binary.h"
#include "test_files.h"

namespace {

using ridge::testing::kQualityData;
using ridge::testing::run_ridge;

TEST(TargetKld, MeetsTheBudgetForFewerBits) {
  const std::string tmp = (std::filesystem::temp_directory_path() / ("ridge_target_kld_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(tmp);
  const std::string base = tmp + "/base.gguf", out = tmp + "/out.gguf", text = kQualityData + "story.txt";
  ASSERT_EQ(run_ridge("synth --preset tiny-qwen3 --type f32 --seed 7 -t 1 -o " + base).rc, 0);
  auto r = run_ridge("quantize " + base + " " + out + " q4_k_m --target-kld 0.05 -f " + text + " -c 64 --chunks 4 -t 2");
  ASSERT_EQ(r.rc, 0) << r.text;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.text, m, std::regex(R"(measured KLD ([0-9.]+) \(predicted [0-9.]+\) at ([0-9.]+) bits/weight)")))
      << r.text;
  const double kld = std::stod(m[1]), bpw = std::stod(m[2]);
  EXPECT_LE(kld, 0.05);
  // The same copy measured by ridge perplexity on the same chunks.
  ASSERT_EQ(run_ridge("perplexity -m " + base + " -f " + text + " -c 64 --chunks 4 -t 2 --save-logits " + tmp + "/b.lp").rc, 0);
  r = run_ridge("perplexity -m " + out + " --kl-divergence " + tmp + "/b.lp --chunks 4 -t 2");
  ASSERT_EQ(r.rc, 0) << r.text;
  ASSERT_TRUE(std::regex_search(r.text, m, std::regex(R"(Mean +KLD: +([0-9.]+))"))) << r.text;
  EXPECT_NEAR(std::stod(m[1]), kld, 1e-5);
  // Fewer bits than every tensor at q8_0.
  r = run_ridge("quantize " + base + " q8_0 --dry-run --tensor-type \"blk.*=q8_0\"");
  ASSERT_TRUE(std::regex_search(r.text, m, std::regex(R"(-> [0-9.]+ MiB \(([0-9.]+) bits/weight\))"))) << r.text;
  EXPECT_LT(bpw, std::stod(m[1]));
  std::filesystem::remove_all(tmp);
}

TEST(TargetKld, BudgetsItCannotMeetAreRefused) {
  const std::string tmp = (std::filesystem::temp_directory_path() / ("ridge_target_kld_bad_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(tmp);
  const std::string base = tmp + "/base.gguf";
  ASSERT_EQ(run_ridge("synth --preset tiny-qwen3 --type f32 --seed 7 -t 1 -o " + base).rc, 0);
  auto r = run_ridge("quantize " + base + " " + tmp + "/o.gguf q4_k_m --target-kld 1e-9 -f " + kQualityData +
                     "story.txt -c 64 --chunks 2");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.text.find("quantize: --target-kld 1e-09: every tensor at q8_0 already gives"), std::string::npos) << r.text;
  r = run_ridge("quantize " + base + " " + tmp + "/o.gguf q4_k_m --target-kld 0.05");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.text.find("--target-kld and -f go together"), std::string::npos) << r.text;
  r = run_ridge("quantize " + base + " " + tmp + "/o.gguf q4_k_m --target-kld 0.05 -f " + kQualityData +
                "story.txt --ladder q4_K,q9_z");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.text.find("quantize: --ladder: 'q9_z' is not a type ridge quantizes to"), std::string::npos) << r.text;
  EXPECT_FALSE(std::filesystem::exists(tmp + "/o.gguf"));
  std::filesystem::remove_all(tmp);
}

}  // namespace
