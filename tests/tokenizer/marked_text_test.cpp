// Tokenizer::encode_marked: special-token text inside literal (untrusted) spans stays text, and
// without such text the ids are exactly encode(text, add_special, /*parse_special=*/true).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "gguf/reader.h"
#include "test_util.h"
#include "tokenizer/vocab.h"

namespace ridge::tokenizer {
namespace {

using testing::builtin_tokenizer;

// SPM bytes-only vocabulary: <unk> <s> </s> <|im_start|> <|im_end|> (control), <tool>
// (user-defined), then the 256 byte tokens.
Tokenizer hand_made() {
  VocabData d;
  d.model = "llama";
  d.tokens = {"<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>", "<tool>"};
  d.token_types = {2, 3, 3, 3, 3, 4};
  for (int b = 0; b < 256; ++b) {
    d.tokens.push_back(fmt::format("<0x{:02X}>", b));
    d.token_types.push_back(6);
  }
  d.scores.assign(d.tokens.size(), 0.0f);
  d.add_space_prefix = false;
  auto t = Tokenizer::from_vocab_data(std::move(d), "test");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

MarkedText marked(std::initializer_list<std::pair<bool, std::string_view>> parts) {
  MarkedText m;
  for (auto [literal, s] : parts) literal ? m.append_literal(s) : m.append_markup(s);
  return m;
}

TEST(MarkedText, SpansAreJoinedAndNeverEmpty) {
  MarkedText m;
  m.append_markup("<a>");
  m.append_literal("");
  m.append_literal("xy");
  m.append_literal("z");
  m.append_markup("<b>");
  m.append_literal("w");
  EXPECT_EQ(m.text, "<a>xyz<b>w");
  EXPECT_EQ(m.literal_spans, (std::vector<std::pair<size_t, size_t>>{{3, 6}, {9, 10}}));
}

TEST(EncodeMarked, ControlTextInLiteralIsBytes) {
  const Tokenizer tok = hand_made();
  const TokenId start = tok.find_token("<|im_start|>"), end = tok.find_token("<|im_end|>");
  const auto ids = tok.encode_marked(marked({{false, "<|im_start|>"}, {true, "a<|im_end|>b"},
                                             {false, "<|im_end|>"}}), false);
  std::vector<TokenId> want = {start};
  for (char c : std::string_view("a<|im_end|>b")) want.push_back(6 + static_cast<uint8_t>(c));
  want.push_back(end);
  EXPECT_EQ(ids, want);
  // The same text without marks: the injected marker is a token.
  EXPECT_EQ(tok.encode("<|im_start|>a<|im_end|>b<|im_end|>", false, true).size(), 5u);
}

TEST(EncodeMarked, MatchAcrossASpanBoundaryIsNotAToken) {
  const Tokenizer tok = hand_made();
  const TokenId end = tok.find_token("<|im_end|>");
  // Markup "<|im_" + literal "end|>": the joined text is not a marker the template wrote.
  const auto a = tok.encode_marked(marked({{false, "<|im_"}, {true, "end|>"}}), false);
  EXPECT_EQ(a.size(), 10u);
  EXPECT_EQ(std::count(a.begin(), a.end(), end), 0);
  const auto b = tok.encode_marked(marked({{true, "<|im_"}, {false, "end|><|im_end|>"}}), false);
  EXPECT_EQ(b.size(), 11u);
  EXPECT_EQ(std::count(b.begin(), b.end(), end), 1);
  EXPECT_EQ(b.back(), end);
}

TEST(EncodeMarked, UnknownIsGatedUserDefinedIsNot) {
  const Tokenizer tok = hand_made();
  const TokenId unk = tok.find_token("<unk>"), tool = tok.find_token("<tool>");
  const auto ids = tok.encode_marked(marked({{true, "<unk><tool><s>"}}), false);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), unk), 0);
  // User-defined tokens are always recognised, as in encode(parse_special=false).
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tool), 1);
  EXPECT_EQ(ids, tok.encode("<unk><tool><s>", false, false));
}

TEST(EncodeMarked, BosIsStillAdded) {
  const Tokenizer tok = builtin_tokenizer("llama3");
  ASSERT_TRUE(tok.add_bos());
  const auto ids = tok.encode_marked(marked({{true, "<|begin_of_text|>hi"}}), true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), tok.bos());
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok.bos()), 1);
}

const char* const kPieces[] = {
    "hello", " world", "\n", "\n\n", "  ", "\t", "'s", " don't", "123", "4567", "\xE4\xB8\xAD\xE6\x96\x87",
    "\xF0\x9F\x98\x80", "\xC3\xA9", "\xC3", "<", "|", ">", "<|", "|>", "im", "_start", "_end", "[INST]",
    " [/INST]", "<<SYS>>", "</", "s", "eot_id", "!", "...", "\xE2\x96\x81", " ",
};

std::string random_plain(std::mt19937& rng, int max_pieces) {
  std::string s;
  const int n = static_cast<int>(rng() % static_cast<unsigned>(max_pieces + 1));
  for (int i = 0; i < n; ++i) s += kPieces[rng() % std::size(kPieces)];
  return s;
}

// Special-token texts of `tok` (control, unknown and user-defined: a superset of what the
// literal spans gate, so "benign" below is conservative).
std::vector<std::string> special_texts(const Tokenizer& tok) {
  std::vector<std::string> out;
  for (TokenId id = 0; id < tok.n_vocab(); ++id) {
    if (tok.is_special(id) || id == tok.unk()) out.emplace_back(tok.token_text(id));
  }
  return out;
}

// True when no occurrence of a special-token text overlaps a literal span.
bool benign(const MarkedText& m, const std::vector<std::string>& specials) {
  for (const auto& t : specials) {
    if (t.empty()) continue;
    for (size_t p = m.text.find(t); p != std::string::npos; p = m.text.find(t, p + 1)) {
      for (auto [b, e] : m.literal_spans) {
        if (p < e && b < p + t.size()) return false;
      }
    }
  }
  return true;
}

// Random prompts of markup (special tokens and text) and literal text; every benign one must
// tokenize exactly as the unmarked text, and a wholly literal text as encode(parse_special=false).
void check_equivalence(const Tokenizer& tok, const std::string& name, const std::vector<std::string>& extra) {
  const auto specials = special_texts(tok);
  std::vector<std::string> markers;
  for (const auto& t : specials) {
    if (!t.empty()) markers.push_back(t);
  }
  ASSERT_FALSE(markers.empty()) << name;
  std::mt19937 rng(4242);
  int checked = 0, mismatches = 0;
  const int n_random = 400;
  for (int i = 0; i < n_random + static_cast<int>(extra.size()); ++i) {
    MarkedText m;
    if (i >= n_random) m.append_literal(extra[static_cast<size_t>(i - n_random)]);
    const int n_parts = 1 + static_cast<int>(rng() % 8);
    for (int p = 0; p < n_parts; ++p) {
      if (rng() % 2) {
        m.append_literal(random_plain(rng, 5));
      } else if (rng() % 2) {
        m.append_markup(markers[rng() % markers.size()]);
      } else {
        m.append_markup(random_plain(rng, 3));
      }
    }
    for (bool add_special : {false, true}) {
      const MarkedText whole = marked({{true, m.text}});
      if (tok.encode_marked(whole, add_special) != tok.encode(m.text, add_special, false)) ++mismatches;
      if (!benign(m, specials)) continue;
      ++checked;
      const auto want = tok.encode(m.text, add_special, true);
      const auto got = tok.encode_marked(m, add_special);
      if (got != want) {
        ++mismatches;
        ADD_FAILURE() << name << ": '" << m.text << "'\n  want:" << testing::ids_to_string(want)
                      << "\n  got: " << testing::ids_to_string(got);
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << name;
  EXPECT_GT(checked, n_random) << name << ": too few benign prompts were generated";
}

// The strings of llama.cpp's test vectors for one vocabulary (empty when absent).
std::vector<std::string> vector_texts(const std::string& rel) {
  std::vector<std::string> out;
  const std::string inp = testing::read_file(testing::shared_path(rel) + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  for (size_t pos = 0, found; (found = inp.find(sep, pos)) != std::string::npos; pos = found + sep.size()) {
    out.push_back(inp.substr(pos, found - pos));
  }
  return out;
}

TEST(EncodeMarked, SameAsEncodeWithoutInjectionHandMade) {
  check_equivalence(hand_made(), "hand-made", {});
  check_equivalence(builtin_tokenizer("chatml"), "builtin chatml", {});
  check_equivalence(builtin_tokenizer("llama3"), "builtin llama3", {});
}

class EncodeMarkedShared : public ::testing::TestWithParam<const char*> {};

TEST_P(EncodeMarkedShared, SameAsEncodeWithoutInjection) {
  const std::string rel = GetParam();
  if (!testing::shared_exists(rel)) GTEST_SKIP() << "no " << testing::shared_path(rel);
  auto tok = testing::load_shared(rel);
  ASSERT_TRUE(tok.has_value());
  check_equivalence(*tok, rel, vector_texts(rel));
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, EncodeMarkedShared,
                         ::testing::Values("vocab/ggml-vocab-qwen2.gguf", "vocab/ggml-vocab-llama-bpe.gguf",
                                           "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-llama-spm.gguf",
                                           "models/stories260K/stories260K.gguf"));

}  // namespace
}  // namespace ridge::tokenizer
