// Tokenizer metadata for synthetic models: copied from a real GGUF, or a built-in byte-level one.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "gguf/writer.h"

namespace ridge::gguf {
class File;
}

namespace ridge::model {

// Copies every tokenizer.* key of `from` into `to`. When the vocabulary has fewer than
// `n_vocab_min` tokens it is padded with unused "[PAD<i>]" tokens. Returns the token count.
Result<int64_t> copy_tokenizer_metadata(const gguf::File& from, gguf::Writer& to, int64_t n_vocab_min);

// A byte-level BPE ("gpt2") tokenizer: the 256 byte tokens, the special tokens of `chat_style`
// ("chatml" or "llama3"), no merges, padded with unused tokens up to n_vocab (>= 264), and the
// matching chat template. Needs nothing but this code, so `ridge synth` works with no download.
void write_builtin_byte_tokenizer(gguf::Writer& w, int64_t n_vocab, std::string_view chat_style);

}  // namespace ridge::model
