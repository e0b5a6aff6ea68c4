// Writing tokenizer metadata into new GGUF files (for `ridge synth`): copying a real tokenizer,
// or a built-in byte-level one that needs no download.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace ridge::gguf {
class File;
class Writer;
}  // namespace ridge::gguf

namespace ridge::tokenizer {

// Copies every tokenizer.* key of `from` (vocabulary, merges, scores, types, special ids, flags,
// tokenizer.chat_template, ...) into `to`, unchanged. Fails if `from` has no tokenizer.
Status copy_tokenizer_metadata(const gguf::File& from, gguf::Writer& to);

// A byte-level BPE tokenizer (tokenizer.ggml.model = gpt2, pre = default, no merges): the 256
// byte tokens, the control tokens <|endoftext|> <|im_start|> <|im_end|> (chat_style "chatml",
// the default) or <|begin_of_text|> <|end_of_text|> <|start_header_id|> <|end_header_id|>
// <|eot_id|> ("llama3"), then filler tokens up to n_vocab: words " " + one syllable per base-100
// digit of the id (" kovu"), normal tokens that no merge produces, so a random-weight model's
// output prints as visible nonsense words; with BOS/EOS/EOT
// ids, add_bos and the matching tokenizer.chat_template. llama.cpp loads it (checked against the
// peer). n_vocab below 256 + the special tokens is raised to that count.
void write_builtin_byte_tokenizer(gguf::Writer& w, int64_t n_vocab, std::string_view chat_style);

// Token count write_builtin_byte_tokenizer needs at least for `chat_style`.
int64_t builtin_byte_tokenizer_min_vocab(std::string_view chat_style);

}  // namespace ridge::tokenizer
