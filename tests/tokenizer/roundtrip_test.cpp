// Property tests: decode(encode(s)) == s for random valid UTF-8, and the incremental
// detokenizer never emits a broken UTF-8 sequence.
#include <gtest/gtest.h>

#include <random>

#include "gguf/utf8.h"
#include "test_util.h"
#include "tokenizer/unicode.h"

namespace ridge::tokenizer {
namespace {

// Random valid UTF-8 drawn from scripts and whitespace that stress pre-tokenizers.
std::string random_text(std::mt19937& rng) {
  static constexpr std::pair<uint32_t, uint32_t> kRanges[] = {
      {0x20, 0x7E},     {0x20, 0x7E},     {0x20, 0x7E},    {0x09, 0x0D},   {0xA0, 0x17F},
      {0x370, 0x3FF},   {0x400, 0x4FF},   {0x590, 0x6FF},  {0x900, 0x97F}, {0xE00, 0xE7F},
      {0x3000, 0x30FF}, {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0x1F300, 0x1F6FF}, {0x2000, 0x206F},
      {0x0, 0x1F},      {0x10000, 0x10FFFF},
  };
  std::uniform_int_distribution<size_t> n_chars(0, 40), which(0, std::size(kRanges) - 1);
  std::string s;
  const size_t n = n_chars(rng);
  for (size_t i = 0; i < n; ++i) {
    const auto [lo, hi] = kRanges[which(rng)];
    uint32_t cpt = std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
    if (cpt >= 0xD800 && cpt <= 0xDFFF) cpt = 'x';
    if (std::uniform_int_distribution<int>(0, 9)(rng) == 0) s.append(std::uniform_int_distribution<int>(1, 6)(rng), ' ');
    append_utf8(&s, cpt);
  }
  return s;
}

// `s` with every occurrence of `from` replaced by `to` (built anew: GCC 12 misreports
// std::string::replace in loops under -Werror=restrict).
std::string replace_seq(const std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  for (size_t k = 0; k < s.size();) {
    if (s.compare(k, from.size(), from) == 0) {
      out.append(to);
      k += from.size();
    } else {
      out.push_back(s[k++]);
    }
  }
  return out;
}

class RoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(RoundTrip, DecodeInvertsEncode) {
  const std::string rel = GetParam();
  if (!testing::shared_exists(rel)) GTEST_SKIP() << "no " << testing::shared_path(rel);
  auto tok = testing::load_shared(rel);
  ASSERT_TRUE(tok.has_value());
  std::mt19937 rng(1234);
  for (int i = 0; i < 300; ++i) {
    const std::string s = random_text(rng);
    ASSERT_TRUE(is_valid_utf8(s));
    const auto ids = tok->encode(s, false, false);
    ASSERT_EQ(tok->decode(ids), s) << "ids:" << testing::ids_to_string(ids);

    // Streaming the same ids gives the same text, in pieces that are each valid UTF-8.
    IncrementalDetokenizer detok(*tok);
    std::string streamed;
    for (TokenId id : ids) {
      const std::string part = detok.push(id);
      ASSERT_TRUE(is_valid_utf8(part));
      streamed += part;
    }
    streamed += detok.flush();
    const std::string& expect = tok->add_space_prefix() && tok->model_name() == "llama" && !ids.empty() ? " " + s : s;
    ASSERT_EQ(streamed, expect);
  }
}

// Arbitrary bytes (invalid UTF-8, NULs, special-token text) never break encode; SPM keeps them
// exactly (byte fallback), byte-level BPE gives valid UTF-8 pieces back for them.
TEST_P(RoundTrip, ArbitraryBytes) {
  const std::string rel = GetParam();
  if (!testing::shared_exists(rel)) GTEST_SKIP() << "no " << testing::shared_path(rel);
  auto tok = testing::load_shared(rel);
  ASSERT_TRUE(tok.has_value());
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> len(0, 64), byte(0, 255), coin(0, 3);
  for (int i = 0; i < 300; ++i) {
    std::string s;
    for (int k = len(rng); k > 0; --k) s.push_back(static_cast<char>(byte(rng)));
    if (coin(rng) == 0) s += "<|im_start|><s></s><|endoftext|>";
    for (const bool special : {false, true}) {
      const auto ids = tok->encode(s, false, special);
      for (TokenId id : ids) ASSERT_TRUE(id >= 0 && id < tok->n_vocab());
      const std::string back = tok->decode(ids);
      if (tok->model_name() == "llama" && !special) {
        // A broken lead byte right before a space swallows part of its "▁", which then comes
        // back as the bytes E2 96 81 (llama.cpp does the same); all else is kept exactly.
        ASSERT_EQ(replace_seq(back, "\xE2\x96\x81", " "), s);
      } else if (tok->model_name() == "gpt2" && !special) {
        // Valid UTF-8 except surrogate code points, which llama.cpp keeps (see docs/tokenizer.md).
        std::string check;
        for (size_t k = 0; k < back.size(); ++k) {
          const bool surrogate = k + 2 < back.size() && static_cast<uint8_t>(back[k]) == 0xED &&
                                 static_cast<uint8_t>(back[k + 1]) >= 0xA0;
          if (surrogate) {
            check += "\xEF\xBF\xBD";
            k += 2;
          } else {
            check.push_back(back[k]);
          }
        }
        ASSERT_TRUE(is_valid_utf8(check)) << testing::ids_to_string(ids);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, RoundTrip,
                         ::testing::Values("vocab/ggml-vocab-qwen2.gguf", "vocab/ggml-vocab-llama-bpe.gguf",
                                           "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-llama-spm.gguf",
                                           "models/stories260K/stories260K.gguf"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           n = n.substr(n.rfind('/') + 1);
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace ridge::tokenizer
