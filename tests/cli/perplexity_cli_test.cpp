// `ridge perplexity` against llama.cpp's llama-perplexity on the same files, text and chunk size
// (tests/quality/data/perplexity_reference.json, regen_perplexity_reference.sh): the PPL within
// 0.1% and its uncertainty within 1%, for stories260K and synthetic models; bad input refused in
// one line.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>

#include "run_binary.h"

namespace {

using ridge::testing::run_ridge;

const std::string kStories = std::string(RIDGE_SHARED_DIR) + "/models/stories260K/stories260K.gguf";
const std::string kData = std::string(RIDGE_SOURCE_DIR) + "/tests/quality/data/";

TEST(PerplexityCli, MatchesLlamaPerplexity) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found (../shared)";
  const nlohmann::json ref = nlohmann::json::parse(std::ifstream(kData + "perplexity_reference.json"));
  const std::string tmp = (std::filesystem::temp_directory_path() / ("ridge_ppl_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(tmp);
  ASSERT_GE(ref["cases"].size(), 4u);
  for (const auto& c : ref["cases"]) {
    const std::string name = c["model"];
    SCOPED_TRACE(name + " -c " + std::to_string(c["ctx"].get<int>()));
    std::string model = kStories;
    if (name.rfind("synth:", 0) == 0) {  // synth:PRESET:TYPE
      const std::string preset = name.substr(6, name.find(':', 6) - 6), type = name.substr(name.find(':', 6) + 1);
      model = tmp + "/" + preset + "-" + type + ".gguf";
      if (!std::filesystem::exists(model)) {
        ASSERT_EQ(run_ridge("synth --preset " + preset + " --type " + type + " --seed " +
                            std::to_string(ref["seed"].get<int>()) + " -t 1 -o " + model).rc, 0);
      }
    }
    const auto out = run_ridge("perplexity -m " + model + " -f " + kData + "story.txt -t 2 -c " +
                               std::to_string(c["ctx"].get<int>()));
    ASSERT_EQ(out.rc, 0) << out.text;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out.text, m, std::regex(R"(Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+))"))) << out.text;
    const double ppl = std::stod(m[1]), err = std::stod(m[2]);
    EXPECT_NEAR(ppl, c["ppl"].get<double>(), 1e-3 * c["ppl"].get<double>());
    EXPECT_NEAR(err, c["error"].get<double>(), 1e-2 * c["error"].get<double>());
    ASSERT_TRUE(std::regex_search(out.text, m, std::regex(R"(perplexity: (\d+) chunks)"))) << out.text;
    EXPECT_EQ(std::stoi(m[1]), c["chunks"].get<int>());
  }
  std::filesystem::remove_all(tmp);
}

TEST(PerplexityCli, BadInputIsOneLine) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found (../shared)";
  const std::string story = kData + "story.txt";
  for (const auto& [args, what] : std::vector<std::pair<std::string, std::string>>{
           {"-f " + story + " -c 4096", "needs at least 8192"},
           {"-f /nonexistent.txt", "cannot open"},
           {"-f " + story + " -c 2", "outside 4.."},
           {"-f " + story + " --chunks 0", "--chunks"},
           {"-f " + story + " --kv-type q5_9", "q5_9"}}) {
    const auto out = run_ridge("perplexity -m " + kStories + " " + args);
    EXPECT_EQ(out.rc, 2) << args << ": " << out.text;
    EXPECT_NE(out.text.find(what), std::string::npos) << args << ": " << out.text;
    EXPECT_EQ(out.text.find('\n'), out.text.size() - 1) << "not one line: " << out.text;
  }
}

}  // namespace
