// ridge run / ridge chat through the built binary: output, exit codes, one-line errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>

#include "run_binary.h"
#include "test_util.h"

namespace ridge::model {
namespace {

using Out = ::ridge::testing::CmdOutput;

Out sh(const std::string& args, const std::string& stdin_text = "") {
  return ::ridge::testing::run_ridge(args, stdin_text);
}

class RunCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(testing::stories_path())) GTEST_SKIP() << "no stories260K.gguf";
    model_ = "-m " + testing::stories_path() + " ";
  }
  std::string model_;
};

TEST_F(RunCli, GreedyStoriesText) {
  const Out o = sh("run " + model_ + "-t 1 -p 'Once upon a time' -n 30 --temp 0");
  EXPECT_EQ(o.rc, 0) << o.text;
  EXPECT_NE(o.text.find(", there was a little girl named Lily. She loved to play outside"),
            std::string::npos) << o.text;
  EXPECT_NE(o.text.find("decode:"), std::string::npos);
  EXPECT_NE(o.text.find("tok/s"), std::string::npos);
}

TEST_F(RunCli, ErrorsAreOneLineWithExitCodes) {
  struct Case {
    std::string args;
    int rc;
    std::string needle;
  };
  const Case cases[] = {
      {"run -m /nonexistent.gguf -p x", 1, "/nonexistent.gguf"},
      {"run -m " + std::string(RIDGE_SOURCE_DIR) + "/CMakeLists.txt -p x", 1, "not a GGUF file"},
      {"run " + model_ + "-p x -t 0", 2, "-t must be at least 1"},
      {"run " + model_ + "-p x -n -2", 2, "-n must be 0 or more"},
      {"run " + model_ + "-p x --top-p 1.5", 2, "top_p"},
      {"run " + model_ + "-p x --temp -1", 2, "temperature"},
      {"run " + model_ + "-p x --spec mtp", 2, "--spec mtp: llama has no MTP head"},
      {"run " + model_ + "-p x --spec eagle", 2, "--spec must be ngram, draft or mtp"},
      {"run " + model_ + "-p x --spec draft", 2, "--spec draft needs --draft"},
      {"run " + model_ + "-p x --spec ngram --spec-max 0", 2, "--spec-max must be 1..64"},
      {"run " + model_ + "-p x --spec ngram --spec-rule rejection", 2, "--spec-rule rejection needs a draft model"},
      {"run " + model_ + "-p x --spec ngram --spec-rule exact", 2, "--spec-rule must be auto, match or rejection"},
      {"run " + model_ + "-p 'one two three four five six seven eight nine ten' -c 4", 2,
       "context holds 4"},
  };
  for (const Case& c : cases) {
    const Out o = sh(c.args);
    EXPECT_EQ(o.rc, c.rc) << c.args << "\n" << o.text;
    EXPECT_EQ(o.text.rfind("ridge: error: ", 0), 0u) << o.text;
    EXPECT_EQ(o.text.find('\n'), o.text.size() - 1) << "not one line: " << o.text;
    EXPECT_NE(o.text.find(c.needle), std::string::npos) << o.text;
  }
}

// `run` with the given arguments, plain and with --spec ngram, greedy and sampled with a seed:
// the same text. Returns the speculative runs' counts: forward steps, tokens, drafts accepted,
// drafts.
std::vector<std::array<int, 4>> spec_runs_give_the_same_text(const std::string& args) {
  auto text_of = [](const std::string& out) { return out.substr(0, out.find("\nload:")); };
  std::vector<std::array<int, 4>> counts;
  for (const std::string sampling : {"--temp 0", "--temp 0.9 --top-k 40 -s 7"}) {
    SCOPED_TRACE(sampling);
    const Out plain = sh(args + " " + sampling);
    const Out spec = sh(args + " " + sampling + " --spec ngram --spec-max 6");
    EXPECT_EQ(plain.rc, 0) << plain.text;
    EXPECT_EQ(spec.rc, 0) << spec.text;
    EXPECT_EQ(text_of(spec.text), text_of(plain.text));
    std::smatch m;
    if (!std::regex_search(spec.text, m, std::regex(R"((\d+) forward steps for (\d+) tokens · (\d+) of (\d+) drafted)"))) {
      ADD_FAILURE() << spec.text;
      continue;
    }
    counts.push_back({std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4])});
  }
  return counts;
}

// Speculative decoding by prompt lookup leaves the text as it is, greedy and sampled with a seed
// (every token is still sampled once, from the logits plain decoding computes for it), while the
// run line shows drafts accepted: fewer forward steps than tokens.
TEST_F(RunCli, SpeculativeNgramGivesTheSameText) {
  for (const auto& [steps, tokens, accepted, drafted] : spec_runs_give_the_same_text("run " + model_ + "-t 1 -p 'Once upon a time' -n 160")) {
    EXPECT_GT(accepted, 0);
    EXPECT_LT(steps, tokens);
  }
}

// A hybrid model (recurrent state): the session keeps the state after each row of a
// verification step, so rejected drafts roll back and the text is plain decoding's, greedy and
// sampled (random weights: most drafts are rejected).
TEST(RunCliHybrid, SpeculativeNgramGivesTheSameText) {
  const std::string file = (std::filesystem::temp_directory_path() / "ridge_spec_hybrid_test.gguf").string();
  ASSERT_EQ(sh("synth --preset tiny-qwen35 --type f32 -o " + file).rc, 0);
  const auto counts = spec_runs_give_the_same_text("run -m " + file + " -t 1 -p 'a b c a b c a b' -n 120");
  EXPECT_EQ(counts.size(), 2u);
  for (const auto& [steps, tokens, accepted, drafted] : counts) EXPECT_GT(drafted, accepted) << "drafts were meant to be rejected";
  std::filesystem::remove(file);
}

TEST_F(RunCli, ChatWithPipedStdinKeepsTurnsAndResets) {
  const Out o = sh("chat " + model_ + "-t 1 -n 12 --temp 0", "Once upon a time\\n/reset\\nOnce upon a time\\n/exit\\n");
  EXPECT_EQ(o.rc, 0) << o.text;
  EXPECT_NE(o.text.find("plain text"), std::string::npos) << o.text;  // no template: warned
  // The same first turn after /reset gives the same (greedy) answer: its start appears twice.
  std::string answer;
  size_t at = 0;
  while (at < o.text.size()) {
    const size_t end = o.text.find('\n', at);
    const std::string line = o.text.substr(at, end - at);
    if (line.rfind("ridge:", 0) != 0 && !line.empty()) {
      answer = line.substr(0, 10);
      break;
    }
    at = end == std::string::npos ? o.text.size() : end + 1;
  }
  ASSERT_FALSE(answer.empty()) << o.text;
  const auto first = o.text.find(answer);
  EXPECT_NE(o.text.find(answer, first + 1), std::string::npos) << o.text;
}

// A draft model: the model drafting for itself proposes what the target picks (every draft
// accepted, greedy), the text is unchanged; a draft of another vocabulary is refused.
TEST_F(RunCli, SpeculativeDraftModel) {
  auto text_of = [](const std::string& out) { return out.substr(0, out.find("\nload:")); };
  const std::string args = "run " + model_ + "-t 1 -p 'Once upon a time' -n 60 --temp 0";
  const Out plain = sh(args);
  const Out spec = sh(args + " --draft " + testing::stories_path() + " --spec-max 4");
  ASSERT_EQ(plain.rc, 0) << plain.text;
  ASSERT_EQ(spec.rc, 0) << spec.text;
  EXPECT_EQ(text_of(spec.text), text_of(plain.text));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(spec.text, m, std::regex(R"((\d+) of (\d+) drafted tokens accepted)"))) << spec.text;
  EXPECT_GT(std::stoi(m[2]), 0) << spec.text;
  EXPECT_EQ(m[1], m[2]) << spec.text;

  const std::string other = (std::filesystem::temp_directory_path() / "ridge_draft_vocab_test.gguf").string();
  ASSERT_EQ(sh("synth --preset tiny-llama --type f32 -o " + other).rc, 0);
  const Out bad = sh(args + " --draft " + other);
  std::filesystem::remove(other);
  EXPECT_EQ(bad.rc, 2) << bad.text;
  EXPECT_NE(bad.text.find("--draft: the vocabularies differ at token 0"), std::string::npos) << bad.text;
  EXPECT_EQ(bad.text.find('\n'), bad.text.size() - 1) << "not one line: " << bad.text;
}

// Two chat turns with prompt lookup: the same answers as without, and the cache bookkeeping
// between turns (rejected drafts cut) holds.
TEST_F(RunCli, ChatWithSpeculationKeepsItsAnswers) {
  const std::string in = "Once upon a time\\nThe dog ran\\n/exit\\n";
  const Out plain = sh("chat " + model_ + "-t 1 -n 40 --temp 0", in);
  const Out spec = sh("chat " + model_ + "-t 1 -n 40 --temp 0 --spec ngram", in);
  ASSERT_EQ(plain.rc, 0) << plain.text;
  ASSERT_EQ(spec.rc, 0) << spec.text;
  EXPECT_EQ(spec.text, plain.text);
}

}  // namespace
}  // namespace ridge::model
