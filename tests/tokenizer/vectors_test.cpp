// llama.cpp's tokenizer test vectors (test-tokenizer-0): every string must encode to exactly the
// ids llama.cpp produced (no BOS, special tokens not parsed).
#include <gtest/gtest.h>

#include "test_util.h"

namespace ridge::tokenizer {
namespace {

using testing::ids_to_string;

struct VectorCase {
  std::string text;
  std::string expected;  // " id id id" as in the .out file
};

std::vector<VectorCase> read_cases(const std::string& base) {
  const std::string inp = testing::read_file(base + ".inp");
  const std::string outp = testing::read_file(base + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0;;) {
    const size_t found = inp.find(sep, pos);
    if (found == std::string::npos) break;
    texts.push_back(inp.substr(pos, found - pos));
    pos = found + sep.size();
  }
  std::vector<VectorCase> cases;
  std::istringstream lines(outp);
  std::string line;
  for (const auto& t : texts) {
    if (!std::getline(lines, line)) break;
    cases.push_back({t, line});
  }
  EXPECT_EQ(cases.size(), texts.size()) << base << ": .out has fewer lines than .inp has texts";
  return cases;
}

class VocabVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(VocabVectors, MatchLlamaCpp) {
  const std::string rel = std::string("vocab/ggml-vocab-") + GetParam() + ".gguf";
  if (!testing::shared_exists(rel)) GTEST_SKIP() << "no " << testing::shared_path(rel);
  auto tok = testing::load_shared(rel);
  ASSERT_TRUE(tok.has_value());
  const auto cases = read_cases(testing::shared_path(rel));
  ASSERT_GT(cases.size(), 30u);
  int failures = 0;
  for (const auto& c : cases) {
    const auto ids = tok->encode(c.text, /*add_special=*/false, /*parse_special=*/false);
    std::string got = ids_to_string(ids);
    // The .out lines start with a space before the first id (and are empty for no ids).
    std::string want = c.expected;
    if (got != want) {
      ++failures;
      ADD_FAILURE() << GetParam() << ": text '" << c.text << "'\n  want:" << want << "\n  got: " << got;
    }
  }
  EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(All, VocabVectors,
                         ::testing::Values("qwen2", "llama-bpe", "gpt-2", "llama-spm"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace ridge::tokenizer
