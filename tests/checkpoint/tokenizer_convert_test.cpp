// tokenizer.json into GGUF tokenizer metadata, checked against llama.cpp's own tokenizations:
// each real vocabulary of ../shared/vocab (Qwen2's, Llama 3's, GPT-2's) is written out here as a
// Hugging Face tokenizer.json (vocab, merges, added tokens, its pre-tokenizer), converted back,
// and must encode llama.cpp's test strings to the ids llama.cpp gave (the .out files).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/hf_tokenizer.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"
#include "hf_export.h"
#include "vocab_vectors.h"

namespace ridge::checkpoint {
namespace tokenizer_convert_test {

using json = nlohmann::json;
using testing::tokenizer_json_of;

std::string shared(const std::string& rel) { return std::string(RIDGE_SHARED_DIR) + "/" + rel; }

// `original`'s vocabulary written as a tokenizer.json with `pre`'s split, converted for an `arch`
// model and parsed back; `file` points into `bytes`. Null (with a test failure) where any step fails.
struct Converted {
  std::vector<uint8_t> bytes;
  std::optional<gguf::File> file;
};
std::unique_ptr<Converted> convert_vocab(const gguf::File& original, const std::string& pre, const std::string& arch,
                                         const std::string& tokenizer_config = "") {
  HfTokenizerFiles files;
  files.tokenizer_json = tokenizer_json_of(original, pre);
  files.tokenizer_config_json = tokenizer_config;
  const int64_t n = static_cast<int64_t>(original.get_string_array("tokenizer.ggml.tokens")->size());
  gguf::Writer w;
  w.set("general.architecture", gguf::make_string(arch));
  const Status st = convert_tokenizer(files, n, w);
  EXPECT_TRUE(st.ok()) << st.message();
  auto bytes = w.write_to_memory();
  EXPECT_TRUE(bytes.ok());
  if (!st.ok() || !bytes.ok()) return nullptr;
  auto out = std::make_unique<Converted>();
  out->bytes = std::move(bytes).value();
  auto file = gguf::File::parse(out->bytes, "converted.gguf");
  EXPECT_TRUE(file.ok()) << file.status().message();
  if (!file.ok()) return nullptr;
  out->file.emplace(std::move(file).value());
  return out;
}

class TokenizerConvert : public ::testing::TestWithParam<const char*> {};

TEST_P(TokenizerConvert, EncodesAsLlamaCpp) {
  const std::string pre = GetParam();
  const std::string rel = "vocab/ggml-vocab-" + pre + ".gguf";
  if (!std::filesystem::exists(shared(rel))) GTEST_SKIP() << "no " << shared(rel) << " (../shared absent)";
  auto original = gguf::File::open(shared(rel));
  ASSERT_TRUE(original.ok()) << original.status().message();
  const std::string config = pre == "llama-bpe"
      ? R"({"bos_token":"<|begin_of_text|>","eos_token":"<|end_of_text|>"})"
      : R"({"eos_token":{"content":"<|endoftext|>"},"chat_template":"{{ messages }}"})";
  const auto c = convert_vocab(*original, pre, "llama", config);
  ASSERT_TRUE(c);
  const gguf::File* converted = &*c->file;
  EXPECT_EQ(*converted->get_string("tokenizer.ggml.pre"), *original->get_string("tokenizer.ggml.pre"));
  EXPECT_EQ(*converted->get_string_array("tokenizer.ggml.tokens"), *original->get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(*converted->get_string_array("tokenizer.ggml.merges"), *original->get_string_array("tokenizer.ggml.merges"));
  auto tok = tokenizer::Tokenizer::from_gguf(*converted);
  ASSERT_TRUE(tok.ok()) << tok.status().message();

  EXPECT_GT(testing::expect_llama_cpp_ids(*tok, shared(rel)), 30);
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, TokenizerConvert, ::testing::Values("qwen2", "llama-bpe", "gpt-2"),
                         [](const auto& p) {
                           std::string s = p.param;
                           for (char& c : s) c = c == '-' ? '_' : c;
                           return s;
                         });

// Qwen3.5's tokenizer.json (Qwen2's split regex with \p{M} in the letter classes; llama.cpp's
// converter knows it by its chkhsh) becomes pre "qwen35", here on Qwen2's vocabulary, and encodes
// as llama.cpp does: the peer's ids from tests/tokenizer/data/peer_qwen35.json, for the same
// vocabulary retyped to "qwen35" (some of those texts tokenize differently under "qwen2").
TEST(TokenizerConvertQwen35, SplitRegexGivesQwen35) {
  const std::string rel = "vocab/ggml-vocab-qwen2.gguf";
  if (!std::filesystem::exists(shared(rel))) GTEST_SKIP() << "no " << shared(rel) << " (../shared absent)";
  auto original = gguf::File::open(shared(rel));
  ASSERT_TRUE(original.ok()) << original.status().message();
  const auto c = convert_vocab(*original, "qwen35", "qwen35", R"({"eos_token":{"content":"<|endoftext|>"}})");
  ASSERT_TRUE(c);
  const gguf::File* converted = &*c->file;
  EXPECT_EQ(*converted->get_string("tokenizer.ggml.pre"), "qwen35");
  auto tok = tokenizer::Tokenizer::from_gguf(*converted);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  std::ifstream in(std::string(RIDGE_SOURCE_DIR) + "/tests/tokenizer/data/peer_qwen35.json");
  const json data = json::parse(in);
  int checked = 0;
  for (const json& e : data.at("cases")) {
    const std::string text = e.at("text");
    EXPECT_EQ(tok->encode(text, false, false), e.at("ids").get<std::vector<tokenizer::TokenId>>()) << e.at("text").dump();
    ++checked;
  }
  EXPECT_GE(checked, 100);
}

// gpt-oss's tokenizer.json (o200k's split regex) becomes pre "gpt-4o", here on Qwen2's vocabulary.
TEST(TokenizerConvertGpt4o, SplitRegexGivesGpt4o) {
  const std::string rel = "vocab/ggml-vocab-qwen2.gguf";
  if (!std::filesystem::exists(shared(rel))) GTEST_SKIP() << "no " << shared(rel) << " (../shared absent)";
  auto original = gguf::File::open(shared(rel));
  ASSERT_TRUE(original.ok()) << original.status().message();
  const auto c = convert_vocab(*original, "gpt-4o", "gpt-oss");
  ASSERT_TRUE(c);
  const gguf::File* converted = &*c->file;
  EXPECT_EQ(*converted->get_string("tokenizer.ggml.pre"), "gpt-4o");
  auto tok = tokenizer::Tokenizer::from_gguf(*converted);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_FALSE(tok->encode("Hello world, it's 12345", false, false).empty());
}

TEST(TokenizerConvertErrors, OneLineEach) {
  gguf::Writer w;
  const std::string bpe = R"({"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":["a b"]},)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[]", "not a JSON object"},
      {R"({"model":{"type":"Unigram"}})", "Unigram"},
      {bpe + R"("pre_tokenizer":{"type":"Metaspace"}})", "Metaspace"},
      {bpe + R"("pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"x"}},{"type":"ByteLevel","use_regex":false}]}})", "split regex"},
      {bpe + R"("normalizer":{"type":"NFC"},"pre_tokenizer":{"type":"ByteLevel"}})", "normalizer"},
      {bpe + R"("pre_tokenizer":null})", "byte-level"},
      // Fields of another type than the format's (found by the fuzzer: an exception, before).
      {R"({"added_tokens":[{"id":70,"content":"<x>","special":true}],"model":{"type":{"a":0}}})", "model type"},
      {bpe + R"("pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":7},{"type":"Split","pattern":{"Regex":3}}]}})", "pre-tokenizer"},
  };
  for (const auto& [text, says] : cases) {
    const Status st = convert_tokenizer({text, "", ""}, 2, w);
    ASSERT_FALSE(st.ok()) << text;
    EXPECT_NE(st.message().find(says), std::string::npos) << st.message();
  }
  // An added token's "special" of another type is taken as not special, not an exception.
  EXPECT_TRUE(convert_tokenizer({R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"ByteLevel"},)"
                                 R"("added_tokens":[{"id":1,"content":"<s>","special":"yes"}]})", "", ""}, 2, w).ok());
  const Status past = convert_tokenizer({bpe + R"("pre_tokenizer":{"type":"ByteLevel"}})", "", ""}, 1, w);
  EXPECT_NE(past.message().find("token id 1 past the model's 1 embedding rows"), std::string::npos) << past.message();
  const Status missing = convert_tokenizer({bpe + R"("pre_tokenizer":{"type":"ByteLevel"}})", R"({"eos_token":"</s>"})", ""}, 2, w);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("</s>"), std::string::npos) << missing.message();
}

}  // namespace tokenizer_convert_test
}  // namespace ridge::checkpoint
