// Tokenizer metadata for synthetic models copied from a real GGUF, padded to the model's vocabulary.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "gguf/writer.h"

namespace ridge::gguf {
class File;
}

namespace ridge::offline {

// Copies every tokenizer.* key of `from` into `to`. When the vocabulary has fewer than
// `n_vocab_min` tokens it is padded with unused "[PAD<i>]" tokens. Returns the token count.
Result<int64_t> copy_tokenizer_metadata(const gguf::File& from, gguf::Writer& to, int64_t n_vocab_min);

}  // namespace ridge::offline
