// Tokenizers built from GGUF metadata alone: SentencePiece-style BPE (`llama`), byte-level BPE
// (`gpt2`) with the qwen2, llama-bpe, gpt-2, gpt-4o, ... pre-tokenizers, and Gemma 4's BPE on
// raw UTF-8 (`gemma4`). Matches llama.cpp exactly.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace ridge::gguf {
class File;
}

namespace ridge::tokenizer {

using TokenId = int32_t;
struct VocabData;

// A prompt assembled from trusted markup (a chat template's own text) and untrusted literal
// text (message content): special-token text inside a literal span must not become a control
// token, or a user could close their turn and open a system one.
struct MarkedText {
  std::string text;
  // [begin, end) byte ranges of literal text: sorted, disjoint, never empty.
  std::vector<std::pair<size_t, size_t>> literal_spans;

  void append_markup(std::string_view s) { text += s; }
  void append_literal(std::string_view s);  // joins a literal span that ends where it starts
};

class Tokenizer {
 public:
  static Result<Tokenizer> from_gguf(const gguf::File& file);
  // From metadata already read (tests, synthetic vocabularies). `name` appears in errors.
  static Result<Tokenizer> from_vocab_data(VocabData data, std::string_view name);
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // add_special: add BOS (and EOS) where the metadata asks for it.
  // parse_special: recognise special/control token text such as "<|im_start|>".
  // (User-defined tokens are always recognised, as in llama.cpp.) Invalid UTF-8 never fails:
  // see docs/tokenizer.md for the policy.
  std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special) const;
  // encode(m.text, add_special, /*parse_special=*/true), except that a control or unknown token
  // match overlapping a literal span is not a token: that text stays ordinary text, as with
  // parse_special=false. User-defined tokens are recognised everywhere, as in encode().
  // Without special-token text in the literal spans the ids equal encode(m.text, ..., true).
  std::vector<TokenId> encode_marked(const MarkedText& m, bool add_special) const;
  // The bytes of one token (byte tokens decoded, SPM "▁" turned into spaces). Special tokens
  // render as their text. An id outside the vocabulary gives "".
  std::string token_to_piece(TokenId id) const;
  // Concatenated pieces. For SPM vocabularies with add_space_prefix, the leading space of the
  // first token is removed (the one encode() added), so decode(encode(s, false, false)) == s.
  // render_special=false drops control and unknown tokens (user-defined tokens stay).
  std::string decode(std::span<const TokenId> ids, bool render_special = true) const;

  int32_t n_vocab() const;
  TokenId bos() const;  // -1 if none
  TokenId eos() const;  // -1 if none
  TokenId eot() const;  // -1 if none
  bool add_bos() const;
  bool add_eos() const;
  bool add_space_prefix() const;
  TokenId unk() const;  // -1 if none
  bool is_control(TokenId id) const;  // control tokens (<|im_start|>, BOS, ...)
  std::span<const TokenId> eog_ids() const;  // sorted
  bool is_eog(TokenId id) const;      // end of generation (eos, eot, <|im_end|>, ...)
  bool is_special(TokenId id) const;  // control / user-defined tokens
  std::string_view model_name() const;  // "llama", "gpt2" or "gemma4"
  std::string_view pre_name() const;    // "qwen2", "llama-bpe", "gpt-2", "gpt-4o", "gemma4", "default"
  // The token's text as stored in the vocabulary.
  std::string_view token_text(TokenId id) const;
  // Token id of an exact vocabulary string (special tokens included), or -1.
  TokenId find_token(std::string_view text) const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::vector<TokenId> encode_impl(std::string_view text, bool add_special, bool parse_special,
                                   std::span<const std::pair<size_t, size_t>> literal_spans) const;
  std::unique_ptr<Impl> impl_;
};

// Turns a stream of token ids into text pieces for streaming output: never emits an
// incomplete UTF-8 sequence; bytes that can never complete are emitted as U+FFFD at flush.
class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tok) : tok_(&tok) {}
  // Returns the newly completed text (possibly empty).
  std::string push(TokenId id);
  // Returns whatever is pending, with invalid trailing bytes replaced.
  std::string flush();

 private:
  const Tokenizer* tok_;
  std::string pending_;
};

}  // namespace ridge::tokenizer
