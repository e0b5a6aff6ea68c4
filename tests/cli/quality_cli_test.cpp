// `ridge quality` end to end on stories260K: the base row and one row per type, each copy's KL
// divergence equal to what llama-perplexity --kl-divergence reports for the same Q4_0 file
// (kld_reference.json), the frontier marked, the SVG drawn; bad types and machines refused.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "run_binary.h"
#include "test_files.h"

namespace {

using ridge::testing::kStories;
using ridge::testing::kQualityData;

using ridge::testing::run_ridge;


TEST(QualityCli, StoriesTableAgreesWithLlamaPerplexity) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found (../shared)";
  const nlohmann::json ref = nlohmann::json::parse(std::ifstream(kQualityData + "kld_reference.json"));
  const std::string svg = (std::filesystem::temp_directory_path() / ("ridge_quality_" + std::to_string(::getpid()) + ".svg")).string();
  const auto out = run_ridge("quality -m " + kStories + " -f " + kQualityData + "story.txt -c 128 --chunks -1 -t 2 --hw h100 "
                             "--types q8_0,q4_0 --decode-tokens 4 --svg " + svg);
  ASSERT_EQ(out.rc, 0) << out.text;
  // type, file MiB, bpw, fallback, MB/token, PPL, mean KLD, KLD p99, same top, RMS, tok/s here, tok/s h100
  std::smatch m;
  const std::regex row(R"((f32|q8_0|q4_0) +[0-9.]+ +[0-9.]+ +\d+ +([0-9.]+) +([0-9.]+) +([0-9.]+) +[0-9.]+ +([0-9.]+)% .*)");
  std::map<std::string, std::vector<double>> rows;
  std::istringstream in(out.text);
  for (std::string line; std::getline(in, line);) {
    if (std::regex_match(line, m, row)) {
      rows[m[1]] = {std::stod(m[2]), std::stod(m[3]), std::stod(m[4]), std::stod(m[5])};
      EXPECT_NE(line.find('*'), std::string::npos) << "every file here is on the frontier: " << line;
    }
  }
  ASSERT_EQ(rows.size(), 3u) << out.text;
  EXPECT_NE(out.text.find("(base)"), std::string::npos);
  EXPECT_EQ(rows["f32"][2], 0.0);
  EXPECT_NEAR(rows["f32"][1], 4.9564, 1e-3 * 4.9564);  // llama-perplexity's PPL of the same text (perplexity_reference.json)
  const auto& q4 = ref["cases"][1];
  ASSERT_EQ(q4["type"], "q4_0");
  EXPECT_NEAR(rows["q4_0"][2], q4["kld_mean"].get<double>(), 0.03 * q4["kld_mean"].get<double>());
  EXPECT_NEAR(rows["q4_0"][1], q4["ppl_q"].get<double>(), 5e-3 * q4["ppl_q"].get<double>());
  EXPECT_NEAR(rows["q4_0"][3], q4["same_top"].get<double>(), 2.0);
  // Fewer bytes per token, more divergence, as the types go down.
  EXPECT_GT(rows["f32"][0], rows["q8_0"][0]);
  EXPECT_GT(rows["q8_0"][0], rows["q4_0"][0]);
  EXPECT_LT(rows["q8_0"][2], rows["q4_0"][2]);
  std::stringstream chart;
  chart << std::ifstream(svg).rdbuf();
  EXPECT_NE(chart.str().find("<svg"), std::string::npos);
  EXPECT_NE(chart.str().find("class='frontier'"), std::string::npos) << chart.str().substr(0, 400);
  for (const char* label : {">f32<", ">q8_0<", ">q4_0<"}) EXPECT_NE(chart.str().find(label), std::string::npos) << label;
  std::filesystem::remove(svg);
}

TEST(QualityCli, BadInputIsOneLine) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found (../shared)";
  const std::string base = "quality -m " + kStories + " -f " + kQualityData + "story.txt ";
  for (const auto& [args, what] : std::vector<std::pair<std::string, std::string>>{
           {"--types q4_0,q9_9", "q9_9"}, {"--hw nowhere", "nowhere"}, {"-c 4096", "needs at least"},
           {"--decode-tokens 0", "--decode-tokens"}, {"--keep /proc/ridge-quality", "--keep"}}) {
    const auto out = run_ridge(base + args);
    EXPECT_EQ(out.rc, 2) << args << ": " << out.text;
    EXPECT_NE(out.text.find(what), std::string::npos) << args << ": " << out.text;
    EXPECT_EQ(out.text.find('\n'), out.text.size() - 1) << "not one line: " << out.text;
  }
  // A quantized base is refused before anything is evaluated.
  const std::string q8 = (std::filesystem::temp_directory_path() / ("ridge_quality_q8_" + std::to_string(::getpid()) + ".gguf")).string();
  ASSERT_EQ(run_ridge("quantize " + kStories + " " + q8 + " q8_0").rc, 0);
  const auto out = run_ridge("quality -m " + q8 + " -f " + kQualityData + "story.txt -c 128 --types q4_0");
  EXPECT_NE(out.rc, 0) << out.text;
  EXPECT_NE(out.text.find("already quantized"), std::string::npos) << out.text;
  EXPECT_EQ(out.text.find('\n'), out.text.size() - 1) << "not one line: " << out.text;
  std::filesystem::remove(q8);
}

}  // namespace
