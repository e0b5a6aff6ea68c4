// The Qwen3.5 pre-tokenizer (tokenizer.ggml.pre = "qwen35"): Qwen2's regex with combining marks
// (\p{M}) counted as letters, [\p{L}\p{M}]+ for words and [^\s\p{L}\p{M}\p{N}]+ for punctuation
// runs. There is no Qwen3.5 vocabulary in ../shared, so the reference vocabulary is Qwen2's with
// only tokenizer.ggml.pre rewritten to "qwen35" (built in memory here); the ids are llama.cpp's,
// from the peer (data/peer_qwen35.json, written by data/regen_peer_qwen35.sh), which also holds
// the peer's ids for the unchanged "qwen2" file to show the texts on which the two differ.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>

#include "test_util.h"
#include "tokenizer/pretokenizer.h"

namespace ridge::tokenizer {
namespace {

constexpr const char* kQwen2Vocab = "vocab/ggml-vocab-qwen2.gguf";

// GGUF bytes of ../shared's Qwen2 vocabulary with tokenizer.ggml.pre = "qwen35", nothing else changed.
Result<std::vector<uint8_t>> qwen35_vocab() {
  RIDGE_ASSIGN_OR_RETURN(gguf::File file, gguf::File::open(testing::shared_path(kQwen2Vocab)));
  if (!file.tensors().empty()) return error("{} is not vocab-only", kQwen2Vocab);
  gguf::Writer w;
  bool retyped = false;
  for (const auto& [key, value] : file.metadata()) {
    gguf::Value v = value;
    if (key == "tokenizer.ggml.pre") {
      v = gguf::make_string("qwen35");
      retyped = true;
    }
    w.set(key, std::move(v));
  }
  if (!retyped) return error("{} has no tokenizer.ggml.pre", kQwen2Vocab);
  return w.write_to_memory();
}

std::vector<std::string> words(PreType type, std::string_view text) {
  auto pre = PreTokenizer::create(type);
  EXPECT_TRUE(pre.ok()) << pre.status().message();
  std::vector<WordSpan> spans;
  pre->split(text, &spans);
  std::vector<std::string> out;
  for (const WordSpan w : spans) out.emplace_back(text.substr(w.begin, w.end - w.begin));
  return out;
}

using Words = std::vector<std::string>;

// Splits derived by hand from the two regexes.
TEST(Qwen35PreTokenizer, MarksStayInWords) {
  // A mark inside a word: Qwen2 ends the word at it (the mark then prefixes the next letters).
  EXPECT_EQ(words(PreType::kQwen35, "ab\u0301cd"), (Words{"ab\u0301cd"}));
  EXPECT_EQ(words(PreType::kQwen2, "ab\u0301cd"), (Words{"ab", "\u0301cd"}));
  // Devanagari: virama (Mn) and vowel sign (Mc) are marks.
  EXPECT_EQ(words(PreType::kQwen35, "नमस्ते दुनिया"), (Words{"नमस्ते", " दुनिया"}));
  EXPECT_EQ(words(PreType::kQwen2, "नमस्ते"), (Words{"नमस", "्त", "े"}));
  // A trailing mark: Qwen2 makes it a punctuation word.
  EXPECT_EQ(words(PreType::kQwen35, "e\u0301 x"), (Words{"e\u0301", " x"}));
  EXPECT_EQ(words(PreType::kQwen2, "e\u0301 x"), (Words{"e", "\u0301", " x"}));
  // Punctuation runs stop at a mark under qwen35 (which then is a word of its own).
  EXPECT_EQ(words(PreType::kQwen35, "!!\u0301?"), (Words{"!!", "\u0301", "?"}));
  EXPECT_EQ(words(PreType::kQwen2, "!!\u0301?"), (Words{"!!\u0301?"}));
  // The optional character before a word may still be punctuation, and digits are single.
  EXPECT_EQ(words(PreType::kQwen35, "(e\u0301)12"), (Words{"(e\u0301", ")", "1", "2"}));
  EXPECT_EQ(words(PreType::kQwen35, "I'm  \n\nok"), (Words{"I", "'m", "  \n\n", "ok"}));
}

TEST(Qwen35PreTokenizer, NameMapsToQwen35) {
  VocabData d;
  d.model = "gpt2";
  d.tokens = {"a", "b", "ab"};
  d.merges = {"a b"};
  d.has_merges = true;
  d.pre = "qwen35";
  auto v = Vocab::build(d, "test");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->pre_type, PreType::kQwen35);
  EXPECT_EQ(v->pre_name, "qwen35");
}

// Writes the vocabulary regen_peer_qwen35.sh hands to the peer.
TEST(Qwen35Peer, DumpForPeer) {
  const char* dir = std::getenv("RIDGE_TOKENIZER_DUMP_DIR");
  if (dir == nullptr) GTEST_SKIP() << "set RIDGE_TOKENIZER_DUMP_DIR to write qwen2_qwen35.gguf";
  if (!testing::shared_exists(kQwen2Vocab)) GTEST_SKIP() << "no " << testing::shared_path(kQwen2Vocab);
  auto bytes = qwen35_vocab();
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  const std::string path = std::string(dir) + "/qwen2_qwen35.gguf";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  EXPECT_EQ(std::fwrite(bytes->data(), 1, bytes->size(), f), bytes->size());
  EXPECT_EQ(std::fclose(f), 0);
}

// Every text: ridge's ids under "qwen35" are llama.cpp's, and ridge's ids under the unchanged
// "qwen2" file are llama.cpp's ids_qwen2; enough texts differ between the two that a "qwen35"
// falling back to Qwen2's regex fails here.
TEST(Qwen35Peer, MatchesLlamaCpp) {
  const auto data = nlohmann::json::parse(
      testing::read_file(std::string(RIDGE_SOURCE_DIR) + "/tests/tokenizer/data/peer_qwen35.json"));
  ASSERT_EQ(data.at("pre"), "qwen35");
  if (!testing::shared_exists(data.at("model"))) {
    GTEST_SKIP() << "no " << testing::shared_path(data.at("model")) << ": the qwen35 test vocabulary is built from it";
  }
  auto bytes = qwen35_vocab();
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto file = gguf::File::parse(*bytes, "qwen2_qwen35.gguf");
  ASSERT_TRUE(file.ok()) << file.status().message();
  auto tok = Tokenizer::from_gguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ(tok->pre_name(), "qwen35");
  auto qwen2 = testing::load_shared(kQwen2Vocab);
  ASSERT_TRUE(qwen2.has_value());
  int n = 0, failures = 0, differ = 0;
  for (const auto& c : data.at("cases")) {
    const std::string text = c.at("text");
    const auto want = c.at("ids").get<std::vector<TokenId>>();
    const auto want_qwen2 = c.at("ids_qwen2").get<std::vector<TokenId>>();
    const auto got = tok->encode(text, /*add_special=*/false, /*parse_special=*/false);
    const auto got_qwen2 = qwen2->encode(text, /*add_special=*/false, /*parse_special=*/false);
    ++n;
    differ += want != want_qwen2;
    if (got != want || got_qwen2 != want_qwen2) {
      ++failures;
      ADD_FAILURE() << "text " << c.at("text").dump() << "\n  qwen35 want:" << testing::ids_to_string(want)
                    << "\n  qwen35 got: " << testing::ids_to_string(got)
                    << "\n  qwen2 want: " << testing::ids_to_string(want_qwen2)
                    << "\n  qwen2 got:  " << testing::ids_to_string(got_qwen2);
    }
  }
  EXPECT_GE(n, 100);
  EXPECT_GE(differ, 5) << "too few texts tell qwen35 from qwen2";
  EXPECT_EQ(failures, 0) << failures << " of " << n << " cases differ";
}

}  // namespace
}  // namespace ridge::tokenizer
