// Tokenizer behaviour on small hand-made vocabularies (no shared data needed): merge order,
// byte fallback, special tokens, the incremental detokenizer and bad metadata.
#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "test_util.h"
#include "tokenizer/vocab.h"

namespace ridge::tokenizer {
namespace {

// SPM vocabulary: <unk> <s> </s>, 256 byte tokens, then a few pieces with scores.
VocabData spm_data() {
  VocabData d = testing::spm_byte_vocab();
  const std::pair<const char*, float> pieces[] = {
      {"\xE2\x96\x81", -1}, {"a", -2}, {"b", -2}, {"c", -2}, {"ab", -3}, {"bc", -1.5},
      {"\xE2\x96\x81" "a", -4}, {"<tool>", 0},
  };
  for (auto [t, s] : pieces) {
    d.tokens.push_back(t);
    d.token_types.push_back(std::string_view(t) == "<tool>" ? 4 : 1);
  }
  d.scores.assign(d.tokens.size(), 0.0f);
  for (size_t i = 0; i < std::size(pieces); ++i) d.scores[259 + i] = pieces[i].second;
  return d;
}

Tokenizer make(VocabData d) {
  auto t = Tokenizer::from_vocab_data(std::move(d), "test");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

TEST(ByteUnicodeMap, Gpt2Table) {
  ByteUnicodeMap m;
  EXPECT_EQ(m.byte_to_cpt(' '), 0x120u);   // "Ġ"
  EXPECT_EQ(m.byte_to_cpt('\n'), 0x10Au);  // "Ċ"
  EXPECT_EQ(m.byte_to_cpt('A'), uint32_t{'A'});
  EXPECT_EQ(m.byte_to_cpt(0xAD), 0x143u);  // the last non-printable byte
  std::string raw;
  EXPECT_TRUE(m.decode("\xC4\xA0hello", &raw));
  EXPECT_EQ(raw, " hello");
  EXPECT_FALSE(m.decode("\xE4\xBD\xA0", &raw));  // U+4F60 is no byte's image
}

TEST(Utf8, LenientDecodeMatchesLlamaCppRules) {
  auto decode_all = [](std::string_view s) {
    std::vector<uint32_t> out;
    for (size_t pos = 0; pos < s.size();) out.push_back(decode_utf8_lenient(s, &pos));
    return out;
  };
  EXPECT_EQ(decode_all("a\x80" "b"), (std::vector<uint32_t>{'a', 0xFFFD, 'b'}));
  EXPECT_EQ(decode_all("\xE4\xB8"), (std::vector<uint32_t>{0xFFFD, 0xFFFD}));
  EXPECT_EQ(decode_all("\xC0\xAF"), (std::vector<uint32_t>{'/'}));           // overlong accepted
  EXPECT_EQ(decode_all("\xED\xA0\x80"), (std::vector<uint32_t>{0xD800}));    // surrogate kept
  EXPECT_EQ(decode_all("\xF5\x80\x80\x80").size(), 4u);                       // > U+10FFFF: invalid
}

TEST(Utf8, ScanFindsCompleteAndBrokenSequences) {
  EXPECT_EQ(scan_utf8("ab\xE4\xBD").valid_len, 2u);
  EXPECT_TRUE(scan_utf8("ab\xE4\xBD").incomplete);
  const auto bad = scan_utf8("a\xE4z");
  EXPECT_EQ(bad.valid_len, 1u);
  EXPECT_EQ(bad.invalid_len, 1u);
  EXPECT_EQ(scan_utf8("\xC0\xAF").invalid_len, 1u);  // strict: overlong is invalid here
}

TEST(Spm, MergesByScoreAndFallsBackToBytes) {
  const Tokenizer tok = make(spm_data());
  const TokenId sp = tok.find_token("\xE2\x96\x81"), sp_a = tok.find_token("\xE2\x96\x81" "a");
  const TokenId bc = tok.find_token("bc");
  // "▁abc": the best-scored pair is "bc" (-1.5), not "ab" (-3); then "▁a" (-4) ("abc" is none).
  EXPECT_EQ(tok.encode("abc", false, false), (std::vector<TokenId>{sp_a, bc}));
  EXPECT_EQ(tok.encode("abc", true, false), (std::vector<TokenId>{tok.bos(), sp_a, bc}));
  // "é" is not a piece: its bytes C3 A9 become <0xC3> <0xA9>.
  EXPECT_EQ(tok.encode("\xC3\xA9", false, false),
            (std::vector<TokenId>{sp, tok.find_token("<0xC3>"), tok.find_token("<0xA9>")}));
  // Invalid UTF-8 reaches the byte fallback unchanged.
  EXPECT_EQ(tok.encode("\x80", false, false), (std::vector<TokenId>{sp, tok.find_token("<0x80>")}));
  EXPECT_EQ(tok.decode(tok.encode("\xC3\xA9 abc\x80", false, false)), "\xC3\xA9 abc\x80");
}

TEST(Spm, SpecialTokensOnlyWhenAsked) {
  const Tokenizer tok = make(spm_data());
  const TokenId s = tok.find_token("<s>"), tool = tok.find_token("<tool>");
  const auto plain = tok.encode("<s>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), s), 0);
  EXPECT_EQ(tok.encode("<s>", false, true), (std::vector<TokenId>{s}));
  // User-defined tokens are always recognised (llama.cpp does the same).
  const auto ids = tok.encode("a<tool>", false, false);
  ASSERT_EQ(ids.size(), 2u);  // "▁a" "<tool>"
  EXPECT_EQ(ids[1], tool);
  EXPECT_TRUE(tok.is_special(tool));
  EXPECT_EQ(tok.decode(std::vector<TokenId>{s, tok.find_token("a")}, false), "a");
}

TEST(IncrementalDetokenizer, HoldsIncompleteSequences) {
  const Tokenizer tok = make(spm_data());
  auto byte = [&](int b) { return tok.find_token(fmt::format("<0x{:02X}>", b)); };
  IncrementalDetokenizer d(tok);
  EXPECT_EQ(d.push(byte(0xE4)), "");
  EXPECT_EQ(d.push(byte(0xBD)), "");
  EXPECT_EQ(d.push(byte(0xA0)), "\xE4\xBD\xA0");  // 你
  EXPECT_EQ(d.push(byte(0xE4)), "");
  EXPECT_EQ(d.push(tok.find_token("a")), "\xEF\xBF\xBD" "a");  // can never complete: U+FFFD now
  EXPECT_EQ(d.push(byte(0xF0)), "");
  EXPECT_EQ(d.push(byte(0x9F)), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");  // incomplete at the end
  EXPECT_EQ(d.flush(), "");
}

// Byte-level BPE: the 256 byte tokens, merges by rank.
VocabData bpe_data() {
  VocabData d;
  d.model = "gpt2";
  d.pre = "gpt-2";
  ByteUnicodeMap m;
  for (int b = 0; b < 256; ++b) d.tokens.push_back(m.encode(std::string(1, static_cast<char>(b))));
  for (const char* t : {"bc", "ab", "Ġa", "abc", "<|endoftext|>"}) d.tokens.push_back(t);
  d.token_types.assign(d.tokens.size(), 1);
  d.token_types.back() = 3;
  d.merges = {"b c", "a b", "Ġ a", "a bc"};
  return d;
}

TEST(Bpe, LowestRankMergesFirst) {
  const Tokenizer tok = make(bpe_data());
  // "abc": rank 0 is "b c", then "a bc" (rank 3) -> "abc"; "ab" never forms.
  EXPECT_EQ(tok.encode("abc", false, false), (std::vector<TokenId>{tok.find_token("abc")}));
  // " ab": "Ġ a" (rank 2) loses to "a b" (rank 1): Ġ + ab.
  EXPECT_EQ(tok.encode(" ab", false, false), (std::vector<TokenId>{tok.find_token("Ġ"), tok.find_token("ab")}));
  EXPECT_EQ(tok.encode("<|endoftext|>", false, true), (std::vector<TokenId>{tok.find_token("<|endoftext|>")}));
  EXPECT_TRUE(tok.is_eog(tok.find_token("<|endoftext|>")));
  EXPECT_EQ(tok.decode(tok.encode("x\n\xF0\x9F\xA6\x99 abc", false, false)), "x\n\xF0\x9F\xA6\x99 abc");
}

TEST(Bpe, InvalidUtf8BecomesReplacementCharacters) {
  const Tokenizer tok = make(bpe_data());
  EXPECT_EQ(tok.encode("a\x80", false, false), tok.encode("a\xEF\xBF\xBD", false, false));
  EXPECT_EQ(tok.encode("\xF5\x80\x80\x80", false, false),
            tok.encode("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", false, false));
}

TEST(Vocab, BadMetadataIsAnError) {
  VocabData d = bpe_data();
  d.pre = "no-such-pre";
  EXPECT_FALSE(Tokenizer::from_vocab_data(d, "x").ok());
  d = bpe_data();
  d.model = "bert";
  EXPECT_FALSE(Tokenizer::from_vocab_data(d, "x").ok());
  d = bpe_data();
  d.tokens[300 - 44] = d.tokens[0];  // duplicate text
  const auto r = Tokenizer::from_vocab_data(d, "x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("duplicate"), std::string::npos);
  d = spm_data();
  d.scores.resize(3);
  EXPECT_FALSE(Tokenizer::from_vocab_data(d, "x").ok());
}

// <|end|> ends the turn in Phi-3-style vocabularies but only a message in Harmony (gpt-oss),
// whose turns end with <|return|> or <|call|>: there generation goes on after it.
TEST(Vocab, HarmonyEndIsNotEndOfGeneration) {
  auto with = [](std::vector<std::string> extra) {
    VocabData d = spm_data();
    for (auto& t : extra) {
      d.tokens.push_back(std::move(t));
      d.token_types.push_back(3);
      d.scores.push_back(0.0f);
    }
    return make(std::move(d));
  };
  const Tokenizer phi = with({"<|end|>"});
  EXPECT_TRUE(phi.is_eog(phi.find_token("<|end|>")));
  const Tokenizer harmony = with({"<|end|>", "<|return|>", "<|call|>", "<|start|>"});
  EXPECT_FALSE(harmony.is_eog(harmony.find_token("<|end|>")));
  EXPECT_TRUE(harmony.is_eog(harmony.find_token("<|return|>")));
  EXPECT_TRUE(harmony.is_eog(harmony.find_token("<|call|>")));
  EXPECT_TRUE(harmony.is_eog(harmony.eos()));
}

}  // namespace
}  // namespace ridge::tokenizer
