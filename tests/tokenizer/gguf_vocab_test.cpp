// The built-in byte tokenizer and metadata copying, through a real GGUF round trip.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "test_util.h"
#include "tokenizer/gguf_vocab.h"

namespace ridge::tokenizer {
namespace {

constexpr int64_t kBuiltinVocab = 300;

std::vector<uint8_t> builtin_bytes(std::string_view style) {
  gguf::Writer w;
  w.set("general.architecture", gguf::make_string("llama"));
  write_builtin_byte_tokenizer(w, kBuiltinVocab, style);
  auto bytes = w.write_to_memory();
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  return std::move(bytes).value();
}

Tokenizer load(const std::vector<uint8_t>& bytes) {
  auto f = gguf::File::parse(bytes, "builtin.gguf");
  EXPECT_TRUE(f.ok()) << f.status().message();
  auto t = Tokenizer::from_gguf(*f);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

TEST(BuiltinVocab, EveryByteIsItsOwnToken) {
  const auto bytes = builtin_bytes("chatml");
  const Tokenizer tok = load(bytes);
  EXPECT_EQ(tok.n_vocab(), kBuiltinVocab);
  const std::string text = "Hi \xE4\xBD\xA0\n";
  const auto ids = tok.encode(text, true, false);
  ASSERT_EQ(ids.size(), text.size());  // no BOS for chatml, one token per byte
  for (size_t i = 0; i < text.size(); ++i) EXPECT_EQ(ids[i], static_cast<uint8_t>(text[i]));
  EXPECT_EQ(tok.decode(ids), text);
  const TokenId im_end = tok.find_token("<|im_end|>");
  EXPECT_EQ(im_end, 258);
  EXPECT_TRUE(tok.is_eog(im_end));
  EXPECT_TRUE(tok.is_eog(tok.eos()));
  EXPECT_EQ(tok.encode("<|im_start|>x", false, true), (std::vector<TokenId>{257, 'x'}));
}

TEST(BuiltinVocab, Llama3StyleAddsBos) {
  const Tokenizer tok = load(builtin_bytes("llama3"));
  EXPECT_TRUE(tok.add_bos());
  EXPECT_EQ(tok.bos(), 256);
  EXPECT_EQ(tok.encode("a", true, false), (std::vector<TokenId>{256, 'a'}));
  EXPECT_TRUE(tok.is_eog(tok.find_token("<|eot_id|>")));
}

TEST(BuiltinVocab, MatchesPeerData) {
  for (const char* style : {"chatml", "llama3"}) {
    SCOPED_TRACE(style);
    const auto data = nlohmann::json::parse(testing::read_file(
        std::string(RIDGE_SOURCE_DIR) + "/tests/tokenizer/data/peer_builtin_" + style + ".json"));
    const Tokenizer tok = load(builtin_bytes(style));
    EXPECT_EQ(tok.bos(), data.at("bos").get<int>());
    EXPECT_EQ(tok.eos(), data.at("eos").get<int>());
    EXPECT_EQ(tok.add_bos(), data.at("add_bos").get<bool>());
    for (const auto& e : data.at("eog")) EXPECT_EQ(tok.is_eog(e.at(0).get<int>()), e.at(1).get<bool>());
    int n = 0, failures = 0;
    for (const auto& c : data.at("cases")) {
      std::string text;
      if (c.contains("bytes_hex")) {
        const std::string hex = c.at("bytes_hex");
        for (size_t i = 0; i + 1 < hex.size(); i += 2) text.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
      } else {
        text = c.at("text").get<std::string>();
      }
      ++n;
      if (tok.encode(text, false, c.at("special").get<bool>()) != c.at("ids").get<std::vector<TokenId>>()) {
        ++failures;
        ADD_FAILURE() << "differs from llama.cpp: " << c.dump();
      }
    }
    EXPECT_GT(n, 80);
    EXPECT_EQ(failures, 0);
  }
}

// The filler tokens past the bytes and specials decode to visible words (" " and letters), one
// distinct word per id, so a random-weight model's output is visible noise; text still encodes to
// byte tokens only (no merge makes a filler).
TEST(BuiltinVocab, FillerTokensPrintAsDistinctWords) {
  gguf::Writer w;
  w.set("general.architecture", gguf::make_string("qwen3"));
  write_builtin_byte_tokenizer(w, 151936, "chatml");
  auto bytes = w.write_to_memory();
  ASSERT_TRUE(bytes.ok());
  const Tokenizer tok = load(*bytes);
  std::set<std::string> words;
  for (TokenId id = 259; id < 151936; ++id) {
    const std::string word = tok.decode(std::vector<TokenId>{id});
    ASSERT_GE(word.size(), 3u) << id;
    ASSERT_EQ(word[0], ' ') << id;
    for (size_t i = 1; i < word.size(); ++i) ASSERT_TRUE(word[i] >= 'a' && word[i] <= 'z') << id << ": " << word;
    words.insert(word);
  }
  EXPECT_EQ(words.size(), 151936u - 259u);
  const std::string pair = tok.decode(std::vector<TokenId>{44128, 133573});
  EXPECT_EQ(pair, tok.decode(std::vector<TokenId>{44128}) + tok.decode(std::vector<TokenId>{133573}));
  EXPECT_EQ(pair.size(), 14u) << pair;  // " " and three syllables (base-100 digits 4 41 28, 13 35 73)
  const std::string text = words.begin()->substr(1) + " kovu";
  for (TokenId id : tok.encode(text, false, false)) EXPECT_LT(id, 256) << text;
}

TEST(BuiltinVocab, CopyTakesAllTokenizerKeys) {
  const auto bytes = builtin_bytes("chatml");
  auto src = gguf::File::parse(bytes, "src.gguf");
  ASSERT_TRUE(src.ok());
  gguf::Writer w;
  w.set("general.architecture", gguf::make_string("qwen2"));
  ASSERT_TRUE(copy_tokenizer_metadata(*src, w).ok());
  auto out_bytes = w.write_to_memory();
  ASSERT_TRUE(out_bytes.ok());
  auto out = gguf::File::parse(*out_bytes, "dst.gguf");
  ASSERT_TRUE(out.ok());
  size_t n_src = 0;
  for (const auto& [key, value] : src->metadata()) {
    if (key.rfind("tokenizer.", 0) != 0) continue;
    ++n_src;
    const gguf::Value* v = out->find(key);
    ASSERT_NE(v, nullptr) << key;
    EXPECT_EQ(v->to_display(1000000), value.to_display(1000000)) << key;
  }
  EXPECT_GE(n_src, 9u);
  gguf::Writer empty;
  empty.set("general.architecture", gguf::make_string("x"));
  auto no_tok = empty.write_to_memory();
  auto nf = gguf::File::parse(*no_tok, "none.gguf");
  ASSERT_TRUE(nf.ok());
  EXPECT_FALSE(copy_tokenizer_metadata(*nf, w).ok());
}

// Writes the built-in vocabularies for tools/gen_tokenizer_peer_data.mjs when asked to.
TEST(BuiltinVocab, DumpForPeer) {
  const char* dir = std::getenv("RIDGE_TOKENIZER_DUMP_DIR");
  if (dir == nullptr) GTEST_SKIP() << "set RIDGE_TOKENIZER_DUMP_DIR to write builtin_*.gguf";
  for (const char* style : {"chatml", "llama3"}) {
    gguf::Writer w;
    w.set("general.architecture", gguf::make_string("llama"));
    write_builtin_byte_tokenizer(w, kBuiltinVocab, style);
    ASSERT_TRUE(w.write(std::string(dir) + "/builtin_" + style + ".gguf").ok());
  }
}

}  // namespace
}  // namespace ridge::tokenizer
