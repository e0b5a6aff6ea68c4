// Regex pre-tokenizers for byte-level BPE (PCRE2, UTF + UCP, JIT): split text into the words
// that BPE merges never cross, with the same regexes llama.cpp uses for each pre type.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "tokenizer/vocab.h"

namespace ridge::tokenizer {

struct WordSpan {
  uint32_t begin;
  uint32_t end;
};

class PreTokenizer {
 public:
  static Result<PreTokenizer> create(PreType type);

  // Appends the words of `text` (which must be valid UTF-8 apart from surrogate code points,
  // which must have been replaced) to `words` as byte ranges. Each regex of the set splits every
  // piece produced by the previous one; text between matches becomes a word of its own.
  void split(std::string_view text, std::vector<WordSpan>* words) const;

 private:
  struct Regex;
  std::vector<std::shared_ptr<const Regex>> regexes_;
};

}  // namespace ridge::tokenizer
