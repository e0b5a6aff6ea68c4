// The two merge algorithms: byte-level BPE (merge ranks) and SentencePiece BPE (token scores).
// Both follow llama.cpp's procedure exactly, including tie-breaking (leftmost pair first).
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace ridge::tokenizer {

// Encodes pre-tokenized words. Holds scratch buffers and a per-session word cache, so keep one
// per encode() call (it refers to the text of the words it has seen; not thread-safe).
class BpeSession {
 public:
  BpeSession(const Vocab& vocab, const ByteUnicodeMap& bytes) : v_(vocab), bytes_(bytes) {}
  // `word` is raw bytes (not byte-level text); it must outlive the session (cache key).
  void encode_word(std::string_view word, std::vector<int32_t>* out);

 private:
  struct Sym {
    uint32_t start, len;
    int32_t prev, next, id;
  };
  struct Bigram {
    int32_t rank, left, right;
    uint32_t left_len, right_len;
    int32_t merged_id;
  };
  void merge(std::string_view word, std::vector<int32_t>* out);
  void add_bigram(std::string_view word, int32_t left, int32_t right);
  void emit_unknown(std::string_view raw, std::vector<int32_t>* out) const;

  const Vocab& v_;
  const ByteUnicodeMap& bytes_;
  std::vector<Sym> syms_;
  std::vector<Bigram> heap_;
  std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> cache_;  // word -> ids range
  std::vector<int32_t> cache_ids_;
};

// SentencePiece BPE over `text` (spaces already replaced by U+2581), appending ids to `out`.
void spm_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>* out);

}  // namespace ridge::tokenizer
