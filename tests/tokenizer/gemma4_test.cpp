// Gemma 4's tokenizer (tokenizer.ggml.model = "gemma4"): BPE on raw UTF-8 with "▁" for spaces,
// split at newline runs only, <0xNN> byte fallback, BOS always added. The vocabulary is the
// synthetic one of gemma4_vocab.h; the ids are llama.cpp's, from the peer (data/peer_gemma4.json,
// written by data/regen_peer_gemma4.sh).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>

#include "gemma4_vocab.h"
#include "gguf/utf8.h"
#include "test_util.h"

namespace ridge::tokenizer {
namespace {

using testing::Gemma4Variant;

Result<Tokenizer> gemma4_tokenizer(Gemma4Variant variant) {
  RIDGE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                         testing::gemma4_vocab_writer(variant).write_to_memory());
  RIDGE_ASSIGN_OR_RETURN(gguf::File file,
                         gguf::File::parse(bytes, testing::gemma4_file_name(variant)));
  return Tokenizer::from_gguf(file);
}

nlohmann::json gemma4_peer_data() {
  return nlohmann::json::parse(
      testing::read_file(std::string(RIDGE_SOURCE_DIR) + "/tests/tokenizer/data/peer_gemma4.json"));
}

std::string gemma4_case_text(const nlohmann::json& c) {
  return c.contains("bytes_hex") ? testing::from_hex(c.at("bytes_hex"))
                                 : c.at("text").get<std::string>();
}

// llama.cpp's detokenize post-pass for BPE vocabularies (clean_spaces, which Gemma 4 keeps on):
// a space before ? ! . or , goes; " ' " becomes "'"; a space before 's 'm 're 've goes.
// ridge's decode() leaves text as the tokens spell it, so the test applies the pass itself.
std::string llama_clean_spaces(std::string s) {
  auto pass = [&s](auto&& keep_space_before) {
    if (s.empty()) return;
    size_t n = 1;
    for (size_t i = 1; i < s.size(); ++i) {
      const char x = s[i];
      if (s[i - 1] == ' ' && !keep_space_before(i)) --n;
      s[n++] = x;
    }
    s.resize(n);
  };
  pass([&s](size_t i) { return std::string_view("?!.,").find(s[i]) == std::string_view::npos; });
  // " ' " becomes "'"; the second space is skipped, so it cannot start another match.
  if (!s.empty()) {
    std::string t(1, s[0]);
    for (size_t i = 1; i < s.size(); ++i) {
      if (s[i] == '\'' && i + 1 < s.size() && s[i - 1] == ' ' && s[i + 1] == ' ') {
        t.pop_back();
        s[++i] = '\0';
        t.push_back('\'');
        continue;
      }
      t.push_back(s[i]);
    }
    s = std::move(t);
  }
  pass([&s](size_t i) {
    if (s[i] != '\'' || i + 1 >= s.size()) return true;
    const char a = s[i + 1];
    if (a == 's' || a == 'm') return false;
    if (i + 2 >= s.size()) return true;
    const char b = s[i + 2];
    return !((a == 'r' && b == 'e') || (a == 'v' && b == 'e'));
  });
  return s;
}

// Writes the two vocabularies regen_peer_gemma4.sh hands to the peer.
TEST(Gemma4Peer, DumpForPeer) {
  const char* dir = std::getenv("RIDGE_TOKENIZER_DUMP_DIR");
  if (dir == nullptr)
    GTEST_SKIP() << "set RIDGE_TOKENIZER_DUMP_DIR to write gemma4_synthetic*.gguf";
  for (const auto v : {Gemma4Variant::kStandard, Gemma4Variant::kNoBosMissing}) {
    ASSERT_TRUE(testing::gemma4_vocab_writer(v)
                    .write(std::string(dir) + "/" + testing::gemma4_file_name(v))
                    .ok());
  }
}

void expect_vocab_meta(const Tokenizer& tok, const nlohmann::json& meta) {
  EXPECT_EQ(tok.bos(), meta.at("bos").get<int>());
  EXPECT_EQ(tok.eos(), meta.at("eos").get<int>());
  EXPECT_EQ(tok.add_bos(), meta.at("add_bos").get<bool>());
  std::vector<TokenId> eog;
  for (TokenId id : tok.eog_ids()) {
    if (id < 300) eog.push_back(id);
  }
  EXPECT_EQ(eog, meta.at("eog").get<std::vector<TokenId>>());
}

TEST(Gemma4Peer, MatchesLlamaCpp) {
  const auto data = gemma4_peer_data();
  auto tok = gemma4_tokenizer(Gemma4Variant::kStandard);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  auto nobos = gemma4_tokenizer(Gemma4Variant::kNoBosMissing);
  ASSERT_TRUE(nobos.ok()) << nobos.status().message();
  EXPECT_EQ(tok->model_name(), "gemma4");
  EXPECT_EQ(nobos->pre_name(), "gemma4");
  expect_vocab_meta(*tok, data.at("vocab"));
  expect_vocab_meta(*nobos, data.at("vocab_nobos"));
  int n = 0, failures = 0;
  for (const auto& c : data.at("cases")) {
    const std::string text = gemma4_case_text(c);
    const bool special = c.at("special");
    for (const auto& [t, field] : {std::pair{&*tok, "ids"}, std::pair{&*nobos, "ids_nobos"}}) {
      const auto want = c.at(field).get<std::vector<TokenId>>();
      const auto got = t->encode(text, /*add_special=*/false, special);
      ++n;
      if (got != want) {
        ++failures;
        ADD_FAILURE() << field << (special ? " (special)" : "") << ": text "
                      << nlohmann::json(c.at(c.contains("text") ? "text" : "bytes_hex")).dump()
                      << "\n  want:" << testing::ids_to_string(want)
                      << "\n  got: " << testing::ids_to_string(got);
      }
    }
  }
  EXPECT_GT(n, 300);
  EXPECT_EQ(failures, 0) << failures << " of " << n << " encodings differ";
}

// decode() gives the text llama.cpp's detokenize gives, up to llama.cpp's clean_spaces pass.
TEST(Gemma4Peer, DecodesLikeLlamaCpp) {
  const auto data = gemma4_peer_data();
  auto tok = gemma4_tokenizer(Gemma4Variant::kStandard);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  int n = 0;
  for (const auto& c : data.at("cases")) {
    const auto ids = c.at("ids").get<std::vector<TokenId>>();
    EXPECT_EQ(llama_clean_spaces(tok->decode(ids)), c.at("detok").get<std::string>())
        << "ids" << testing::ids_to_string(ids);
    ++n;
  }
  EXPECT_GT(n, 150);
}

// Every valid UTF-8 text comes back from decode(encode(text)) when every byte has a <0xNN> token,
// except that a "▁" in the text comes back as a space (the normalizer made it one).
TEST(Gemma4, RoundTripsEveryValidText) {
  const auto data = gemma4_peer_data();
  auto tok = gemma4_tokenizer(Gemma4Variant::kStandard);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  int n = 0;
  for (const auto& c : data.at("cases")) {
    const std::string text = gemma4_case_text(c);
    if (!is_valid_utf8(text) || text.find("\xE2\x96\x81") != std::string::npos) continue;
    ++n;
    for (const bool special : {false, true}) {
      EXPECT_EQ(tok->decode(tok->encode(text, false, special)), text)
          << nlohmann::json(text).dump();
    }
  }
  EXPECT_GT(n, 200);
}

TEST(Gemma4, SpacesBecomeUnderscoreBlocksBothWays) {
  auto tok = gemma4_tokenizer(Gemma4Variant::kStandard);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  const TokenId hello = tok->find_token("▁Hello"), world = tok->find_token("▁world");
  ASSERT_GE(hello, 0);
  ASSERT_GE(world, 0);
  EXPECT_EQ(tok->encode(" Hello world", false, false), (std::vector<TokenId>{hello, world}));
  // A literal "▁" in the text is the same as a space.
  EXPECT_EQ(tok->encode("▁Hello▁world", false, false), (std::vector<TokenId>{hello, world}));
  EXPECT_EQ(tok->token_to_piece(hello), " Hello");
  EXPECT_EQ(tok->token_to_piece(tok->find_token("▁▁▁▁")), "    ");
  EXPECT_EQ(tok->decode(tok->encode("  Hello  world  ", false, false)), "  Hello  world  ");
  // No space prefix is added, and decode keeps a leading space.
  EXPECT_FALSE(tok->add_space_prefix());
  EXPECT_EQ(tok->encode("Hello", false, false), (std::vector<TokenId>{tok->find_token("Hello")}));
}

TEST(Gemma4, NewlineRunsAreWholeTokensWhenTheyExist) {
  auto tok = gemma4_tokenizer(Gemma4Variant::kStandard);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  const TokenId nl = tok->find_token("\n"), nl2 = tok->find_token("\n\n"),
                nl4 = tok->find_token("\n\n\n\n");
  EXPECT_EQ(tok->encode("\n\n\n\n", false, false), (std::vector<TokenId>{nl4}));
  EXPECT_EQ(tok->encode("\n\n\n", false, false), (std::vector<TokenId>{nl2, nl}));  // merges
  EXPECT_EQ(tok->encode("\n\n\n\n\n", false, false), (std::vector<TokenId>{nl2, nl2, nl}));
  // A word never crosses a newline: "a\n" "b" are split, "▁" stays with its line.
  EXPECT_EQ(
      tok->encode("a\n b", false, false),
      (std::vector<TokenId>{tok->find_token("a"), nl, tok->find_token("▁"), tok->find_token("b")}));
}

TEST(Gemma4, UnknownCharactersFallBackToByteTokens) {
  auto tok = gemma4_tokenizer(Gemma4Variant::kStandard);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ(tok->encode("~", false, false), (std::vector<TokenId>{tok->find_token("<0x7E>")}));
  EXPECT_EQ(tok->encode("語", false, false),
            (std::vector<TokenId>{tok->find_token("<0xE8>"), tok->find_token("<0xAA>"),
                                  tok->find_token("<0x9E>")}));
  EXPECT_EQ(tok->token_to_piece(tok->find_token("<0xE8>")), "\xE8");
  // "q u" merges into "qu", which is no token: its bytes fall back.
  EXPECT_EQ(tok->encode("qu", false, false),
            (std::vector<TokenId>{tok->find_token("<0x71>"), tok->find_token("<0x75>")}));
  // Without the byte token the byte is dropped, as in llama.cpp.
  auto missing = gemma4_tokenizer(Gemma4Variant::kNoBosMissing);
  ASSERT_TRUE(missing.ok()) << missing.status().message();
  EXPECT_EQ(missing->encode("~", false, false), std::vector<TokenId>{});
  EXPECT_EQ(missing->encode("a~b", false, false),
            (std::vector<TokenId>{missing->find_token("a"), missing->find_token("b")}));
}

TEST(Gemma4, BosIsAddedEvenWhenTheFileSaysNo) {
  auto tok = gemma4_tokenizer(Gemma4Variant::kNoBosMissing);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_TRUE(tok->add_bos());
  const auto ids = tok->encode("Hello", /*add_special=*/true, false);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0], tok->find_token("<bos>"));
  EXPECT_EQ(tok->encode("Hello", /*add_special=*/false, false).size(), 1u);
}

TEST(Gemma4, EndTokensButNotEndOfSentenceText) {
  auto tok = gemma4_tokenizer(Gemma4Variant::kStandard);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  for (const char* t : {"<eos>", "<turn|>", "<|tool_response>"})
    EXPECT_TRUE(tok->is_eog(tok->find_token(t))) << t;
  // "</s>" is ordinary text next to <|tool_response>: no end token, never a special match.
  const TokenId s = tok->find_token("</s>");
  EXPECT_FALSE(tok->is_eog(s));
  EXPECT_FALSE(tok->is_special(s));
  const auto ids = tok->encode("</s>", false, /*parse_special=*/true);
  EXPECT_EQ(std::find(ids.begin(), ids.end(), s), ids.end());
}

TEST(Gemma4, MergesAreRequired) {
  VocabData d;
  d.model = "gemma4";
  d.tokens = {"<pad>", "<eos>", "<bos>", "a"};
  d.bos = 2;
  auto tok = Tokenizer::from_vocab_data(d, "no_merges");
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("merges"), std::string::npos) << tok.status().message();
  d.has_merges = true;
  EXPECT_TRUE(Tokenizer::from_vocab_data(d, "empty_merges").ok());
}

// llama.cpp gives a byte-level BPE file (model "gpt2") with tokenizer.ggml.pre = "gemma4" the
// same pre type: the same ids as model "gemma4" (here the file's BOS/EOS ids are set).
TEST(Gemma4, Gpt2ModelWithGemma4PreIsTheSame) {
  auto bytes = testing::gemma4_vocab_writer(Gemma4Variant::kNoBosMissing).write_to_memory();
  ASSERT_TRUE(bytes.ok());
  auto file = gguf::File::parse(*bytes, "gpt2_gemma4_pre.gguf");
  ASSERT_TRUE(file.ok());
  auto data = read_vocab_data(*file);
  ASSERT_TRUE(data.ok());
  auto gemma4 = Tokenizer::from_vocab_data(*data, "gemma4");
  ASSERT_TRUE(gemma4.ok()) << gemma4.status().message();
  data->model = "gpt2";
  data->pre = "gemma4";
  auto gpt2 = Tokenizer::from_vocab_data(*data, "gpt2");
  ASSERT_TRUE(gpt2.ok()) << gpt2.status().message();
  EXPECT_EQ(gpt2->pre_name(), "gemma4");
  EXPECT_TRUE(gpt2->add_bos());
  for (const char* text : {" Hello  world\n\n\n\nça~ 語", "<|turn>user\n</s><turn|>", "\xC3"}) {
    for (const bool special : {false, true}) {
      const auto ids = gpt2->encode(text, true, special);
      EXPECT_EQ(ids, gemma4->encode(text, true, special)) << text;
      EXPECT_EQ(gpt2->decode(ids), gemma4->decode(ids)) << text;
    }
  }
}

}  // namespace
}  // namespace ridge::tokenizer
