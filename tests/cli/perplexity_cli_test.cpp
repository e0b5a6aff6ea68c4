// `ridge perplexity` against llama.cpp's llama-perplexity on the same files, text and chunk size
// (tests/quality/data/perplexity_reference.json, regen_perplexity_reference.sh): the PPL within
// 0.1% and its uncertainty within 1%, for stories260K and synthetic models; the KL-divergence
// report against llama-perplexity --kl-divergence's; bad input refused in one line.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>

#include "quality/log_prob_file.h"
#include "run_binary.h"
#include "test_files.h"

namespace {

using ridge::testing::kStories;
using ridge::testing::kQualityData;

using ridge::testing::run_ridge;


TEST(PerplexityCli, MatchesLlamaPerplexity) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found (../shared)";
  const nlohmann::json ref = nlohmann::json::parse(std::ifstream(kQualityData + "perplexity_reference.json"));
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
    const auto out = run_ridge("perplexity -m " + model + " -f " + kQualityData + "story.txt -t 2 -c " +
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

// KL divergence: ridge writes stories260K's log-probabilities (--save-logits), then reports its
// F16 and Q4_0 copies' divergence from them; llama-perplexity --kl-divergence on the same copies
// and text (kld_reference.json, regen_kld_reference.sh) gave the reference numbers. The F16 copy
// agrees closely; the Q4_0 one within what the two programs' Q4_0 arithmetic differs by.
TEST(PerplexityCli, KlDivergenceMatchesLlamaPerplexity) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found (../shared)";
  const nlohmann::json ref = nlohmann::json::parse(std::ifstream(kQualityData + "kld_reference.json"));
  const std::string tmp = (std::filesystem::temp_directory_path() / ("ridge_kld_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(tmp);
  const std::string base = tmp + "/base.bin";
  auto saved = run_ridge("perplexity -m " + kStories + " -f " + kQualityData + "story.txt -c 128 -t 2 --save-logits " + base);
  ASSERT_EQ(saved.rc, 0) << saved.text;
  ASSERT_EQ(ref["cases"].size(), 2u);
  for (const auto& c : ref["cases"]) {
    const std::string type = c["type"];
    SCOPED_TRACE(type);
    const std::string q = tmp + "/" + type + ".gguf";
    ASSERT_EQ(run_ridge("quantize " + kStories + " " + q + " " + type).rc, 0);
    const auto out = run_ridge("perplexity -m " + q + " --kl-divergence " + base + " -t 2");
    ASSERT_EQ(out.rc, 0) << out.text;
    auto value = [&](const std::string& label) {
      const size_t at = out.text.find(label);
      EXPECT_NE(at, std::string::npos) << label << " missing: " << out.text;
      return at == std::string::npos ? -1.0 : std::stod(out.text.substr(out.text.find(':', at) + 1));
    };
    const bool f16 = type == "f16";
    EXPECT_NEAR(value("Mean PPL(base)"), c["ppl_base"].get<double>(), 1e-3 * c["ppl_base"].get<double>());
    EXPECT_NEAR(value("Mean PPL(Q)"), c["ppl_q"].get<double>(), (f16 ? 1e-3 : 5e-3) * c["ppl_q"].get<double>());
    if (f16) {  // nearly the same distributions: absolute bounds
      EXPECT_NEAR(value("Mean    KLD"), c["kld_mean"].get<double>(), 5e-6);
      EXPECT_NEAR(value("RMS Δp"), c["rms_dp"].get<double>(), 0.05);
    } else {
      EXPECT_NEAR(value("Mean    KLD"), c["kld_mean"].get<double>(), 0.03 * c["kld_mean"].get<double>());
      EXPECT_NEAR(value("Median  KLD"), c["kld_median"].get<double>(), 0.05 * c["kld_median"].get<double>());
      EXPECT_NEAR(value("99.0%   KLD"), c["kld_99"].get<double>(), 0.05 * c["kld_99"].get<double>());
      EXPECT_NEAR(value("RMS Δp"), c["rms_dp"].get<double>(), 0.03 * c["rms_dp"].get<double>());
    }
    EXPECT_NEAR(value("Same top p:"), c["same_top"].get<double>(), 2.0);
  }
  // A base of another vocabulary (7 tokens), and a file that is not one, are refused in one line.
  const std::string other = tmp + "/other.bin";
  {
    ridge::quality::LogProbHeader h;
    h.n_ctx = 8;
    h.n_vocab = 7;
    h.n_chunk = 2;
    h.tokens.assign(16, 1);
    auto w = ridge::quality::LogProbWriter::create(other, h);
    ASSERT_TRUE(w.ok());
    const std::vector<uint16_t> row(static_cast<size_t>(ridge::quality::log_prob_row_width(7)), 0);
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(w->write_row(row).ok());
    ASSERT_TRUE(w->close().ok());
  }
  for (const auto& [args, what] : std::vector<std::pair<std::string, std::string>>{
           {"-m " + kStories + " --kl-divergence " + other, "vocabulary of 7 tokens"},
           {"-m " + kStories + " --kl-divergence " + kQualityData + "story.txt", "is not a file of log-probabilities"},
           {"-m " + kStories + " --kl-divergence " + base + " -f " + kQualityData + "story.txt", "one of them"},
           {"-m " + kStories + " --kl-divergence " + base + " -c 64", "takes the text and the context"}}) {
    const auto bad = run_ridge("perplexity " + args);
    EXPECT_EQ(bad.rc, 2) << args << ": " << bad.text;
    EXPECT_NE(bad.text.find(what), std::string::npos) << args << ": " << bad.text;
    EXPECT_EQ(bad.text.find('\n'), bad.text.size() - 1) << "not one line: " << bad.text;
  }
  std::filesystem::remove_all(tmp);
}

TEST(PerplexityCli, BadInputIsOneLine) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found (../shared)";
  const std::string story = kQualityData + "story.txt";
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
