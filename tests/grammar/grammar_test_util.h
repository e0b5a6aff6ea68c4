// Shared helpers of the grammar tests: small vocabularies, whole-string matching and a slow
// reference mask.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_index.h"

namespace ridge::grammar {

// Token i (< 256) is the single byte i; token 256 is an end-of-generation token.
inline std::shared_ptr<const TokenIndex> byte_vocab() {
  std::vector<std::string> t;
  for (int b = 0; b < 256; ++b) t.emplace_back(1, static_cast<char>(b));
  t.emplace_back("");
  return std::make_shared<const TokenIndex>(std::move(t), std::vector<int32_t>{256});
}

// Feeds `text` byte by byte; true iff every byte is accepted and (if `complete`) the grammar is
// complete at the end. Also checks each byte against the mask.
inline bool full_match(const std::shared_ptr<const Grammar>& g, std::string_view text,
                       bool complete = true) {
  static const std::shared_ptr<const TokenIndex> vocab = byte_vocab();
  Matcher m(g, vocab);
  std::vector<uint8_t> mask;
  for (char c : text) {
    const auto id = static_cast<int32_t>(static_cast<uint8_t>(c));
    m.fill_mask(mask);
    const bool ok = m.accept_token(id).ok();
    EXPECT_EQ(ok, mask[static_cast<size_t>(id)] != 0) << "mask disagrees at byte " << id;
    if (!ok) return false;
  }
  m.fill_mask(mask);
  EXPECT_EQ(m.is_complete(), mask[256] != 0) << "EOG disagrees with is_complete()";
  return !complete || m.is_complete();
}

// Single characters, some multi-character tokens, UTF-8 characters whole and split into bytes,
// two control tokens ("") and two EOG tokens.
inline std::vector<std::string> small_vocab_strings() {
  std::vector<std::string> t;
  for (char c = 0x20; c < 0x7F; ++c) t.emplace_back(1, c);
  for (const char* s :
       {"\n",   "\t",   "\"",    "\":",  "\": ",  "\",",      "\"}",      "{\"", "[\"",  "},",
        "],",   "true", "false", "null", "nul",   "  ",       "\n  ",     "ab",  "abc",  "12",
        "-1",   "0.",   "e+",    "\\n",  "\\u00", "\\\"",     "é",        "中",  "😀",    "\xE4",
        "\xB8", "\xAD", "\xC3",  "\xB1", "\xA9",  "\xF0\x9F", "\x98\x80", "é\"", "\x80", "\xFF"}) {
    t.emplace_back(s);
  }
  t.emplace_back("");      // control token
  t.emplace_back("");      // control token
  t.emplace_back("");      // EOG
  t.emplace_back("</s>");  // EOG with text: its text is ignored
  return t;
}

inline std::shared_ptr<const TokenIndex> small_vocab() {
  auto t = small_vocab_strings();
  const auto n = static_cast<int32_t>(t.size());
  return std::make_shared<const TokenIndex>(std::move(t), std::vector<int32_t>{n - 2, n - 1});
}

// small_vocab_strings() followed by named control tokens (no bytes in the index; their text
// resolves through `resolver`), a control end-of-generation token "<|call|>", and a text token
// "<|" (so the characters of a control token's text can be written as text).
struct ControlVocab {
  std::vector<std::string> text;  // each token's text as the vocabulary lists it
  std::shared_ptr<const TokenIndex> index;
  TokenResolver resolver;
  int32_t id(std::string_view t) const {
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == t) return static_cast<int32_t>(i);
    }
    ADD_FAILURE() << "no token " << t;
    return -1;
  }
};

inline const ControlVocab& control_vocab() {
  static const ControlVocab v = [] {
    ControlVocab c;
    c.text = small_vocab_strings();
    std::vector<int32_t> eog{static_cast<int32_t>(c.text.size()) - 2,
                             static_cast<int32_t>(c.text.size()) - 1};
    const size_t first_control = c.text.size();
    for (const char* t : {"[TOOL_CALLS]", "[ARGS]", "<|end|>", "<|channel|>", "<|call|>"}) {
      c.text.emplace_back(t);
    }
    eog.push_back(static_cast<int32_t>(c.text.size()) - 1);  // <|call|>
    c.text.emplace_back("<|");
    std::vector<std::string> bytes = c.text;
    for (size_t i = first_control; i + 1 < bytes.size(); ++i) bytes[i].clear();
    c.index = std::make_shared<const TokenIndex>(std::move(bytes), std::move(eog));
    c.resolver.n_vocab = c.index->n_vocab();
    auto text = std::make_shared<std::vector<std::string>>(c.text);
    c.resolver.find = [text](std::string_view t) -> std::optional<int32_t> {
      for (size_t i = 0; i < text->size(); ++i) {
        if ((*text)[i] == t && !t.empty()) return static_cast<int32_t>(i);
      }
      return std::nullopt;
    };
    return c;
  }();
  return v;
}

// The slow reference: token t is allowed iff accepting it on a copy succeeds.
inline std::vector<uint8_t> reference_mask(const Matcher& m, int32_t n_vocab) {
  std::vector<uint8_t> out(static_cast<size_t>(n_vocab), 0);
  for (int32_t t = 0; t < n_vocab; ++t) {
    Matcher c = m;
    out[static_cast<size_t>(t)] = c.accept_token(t).ok() ? 1 : 0;
  }
  return out;
}

}  // namespace ridge::grammar
