// `ridge batch --spec ngram` and "prediction" lines on real weights (stories260K): the same
// results as without them, the drafts counted per request and in the summary; bad values are
// one-line usage errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "run_binary.h"
#include "test_files.h"

namespace {

using ridge::testing::kStories;

using ridge::testing::run_ridge;


std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()))).string();
}

std::vector<nlohmann::json> read_results(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(BatchSpec, SameResultsWithSpeculationAndPredictions) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found (../shared)";
  const std::string prompts = temp_path("ridge_batch_spec_in_");
  const std::string lines[] = {
      R"({"prompt": "Once upon a time, there was a little girl. Once upon a time", "max_tokens": 48, "temperature": 0})",
      R"({"prompt": "Lily and Ben went to the park. Lily and Ben", "max_tokens": 40, "temperature": 0.8, "seed": 5})",
      R"({"prompt": "The cat sat on the mat. The cat", "max_tokens": 32, "temperature": 0})",
  };
  {
    std::ofstream f(prompts);
    for (const std::string& l : lines) f << l << "\n";
  }
  const std::string plain_out = temp_path("ridge_batch_plain_out_");
  auto plain = run_ridge("batch -q -t 1 -m " + kStories + " --prompts " + prompts + " --out " + plain_out);
  ASSERT_EQ(plain.rc, 0) << plain.text;
  EXPECT_EQ(plain.text.find("speculation:"), std::string::npos) << plain.text;
  const std::vector<nlohmann::json> want = read_results(plain_out);
  ASSERT_EQ(want.size(), 3u);
  // The second run's lines predict the first run's texts.
  {
    std::ofstream f(prompts);
    for (size_t i = 0; i < 3; ++i) {
      nlohmann::json j = nlohmann::json::parse(lines[i]);
      if (i != 1) j["prediction"] = want[i]["text"];
      else j["prediction_tokens"] = want[i]["tokens"];
      f << j.dump() << "\n";
    }
  }
  const std::string spec_out = temp_path("ridge_batch_spec_out_");
  auto spec = run_ridge("batch -q -t 1 -m " + kStories + " --prompts " + prompts + " --out " + spec_out +
                        " --spec ngram --spec-max 4");
  ASSERT_EQ(spec.rc, 0) << spec.text;
  EXPECT_NE(spec.text.find("speculation: prompt lookup"), std::string::npos) << spec.text;
  const std::vector<nlohmann::json> got = read_results(spec_out);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(got[i]["tokens"], want[i]["tokens"]) << i;
    EXPECT_EQ(got[i]["text"], want[i]["text"]) << i;
  }
  // A draft model (the model's Q4_0 copy) in the engine, greedy drafts verified by each request's
  // own draw: the same results again, the sampled one included.
  const std::string draft = temp_path("ridge_batch_q4_draft_") + ".gguf";
  ASSERT_EQ(run_ridge("quantize " + kStories + " " + draft + " q4_0").rc, 0);
  const std::string draft_out = temp_path("ridge_batch_draft_out_");
  auto drafted = run_ridge("batch -q -t 1 -m " + kStories + " --prompts " + prompts + " --out " + draft_out +
                           " --draft " + draft + " --spec-max 4 --spec-rule match");
  ASSERT_EQ(drafted.rc, 0) << drafted.text;
  EXPECT_NE(drafted.text.find("speculation: draft model"), std::string::npos) << drafted.text;
  const std::vector<nlohmann::json> by_draft = read_results(draft_out);
  ASSERT_EQ(by_draft.size(), 3u);
  int64_t n_drafted = 0;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(by_draft[i]["tokens"], want[i]["tokens"]) << i;
    EXPECT_EQ(by_draft[i]["text"], want[i]["text"]) << i;
    n_drafted += by_draft[i].value("draft_tokens", int64_t{0});
  }
  EXPECT_GT(n_drafted, 0);
  for (const std::string& p : {prompts, plain_out, spec_out, draft, draft_out}) std::filesystem::remove(p);
}

TEST(BatchSpec, BadValuesAreUsageErrors) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found (../shared)";
  const std::string prompts = temp_path("ridge_batch_spec_bad_");
  std::ofstream(prompts) << R"({"prompt": "x", "max_tokens": 2})" << "\n";
  for (const char* flags : {"--spec mtp", "--spec draft", "--spec ngram --spec-max 0", "--spec ngram --spec-ngram 99",
                            "--spec ngram --spec-rule rejection", "--spec-rule match", "--spec ngram --spec-rule x"}) {
    auto r = run_ridge("batch -q -m " + kStories + " --prompts " + prompts + " " + flags);
    EXPECT_EQ(r.rc, 2) << flags << ": " << r.text;
    EXPECT_NE(r.text.find("spec"), std::string::npos) << r.text;
  }
  // A draft of another vocabulary (the built-in one of a random model) is refused in one line.
  const std::string other = temp_path("ridge_batch_other_vocab_") + ".gguf";
  ASSERT_EQ(run_ridge("synth --preset tiny-llama --type f32 -o " + other).rc, 0);
  for (const std::string& flags : {"--spec ngram --draft " + other, "--draft " + other}) {
    auto r = run_ridge("batch -q -m " + kStories + " --prompts " + prompts + " " + flags);
    EXPECT_NE(r.rc, 0) << flags << ": " << r.text;
    EXPECT_NE(r.text.find("--draft"), std::string::npos) << r.text;
  }
  std::filesystem::remove(other);
  auto states = run_ridge("batch -q -m " + kStories + " --prompts " + prompts + " --state-cache -5");
  EXPECT_EQ(states.rc, 2) << states.text;
  EXPECT_NE(states.text.find("--state-cache"), std::string::npos) << states.text;
  EXPECT_EQ(states.text.find('\n'), states.text.size() - 1) << "not one line: " << states.text;
  for (const char* line : {R"({"prompt": "x", "prediction": 5})", R"({"prompt": "x", "prediction_tokens": "a"})",
                           R"({"prompt": "x", "prediction": "a", "prediction_tokens": [1]})"}) {
    std::ofstream(prompts) << line << "\n";
    auto bad_line = run_ridge("batch -q -m " + kStories + " --prompts " + prompts);
    EXPECT_EQ(bad_line.rc, 2) << bad_line.text;
    EXPECT_NE(bad_line.text.find("prediction"), std::string::npos) << bad_line.text;
  }
  std::filesystem::remove(prompts);
}

}  // namespace
