// A Hugging Face tokenizer (tokenizer.json, with tokenizer_config.json's special tokens and chat
// template) as GGUF tokenizer metadata in llama.cpp's form: byte-level BPE ("gpt2"), the tokens
// by id (padded to the model's vocabulary with "[PAD<id>]" tokens, as llama.cpp's converter
// does), their types (added special tokens: control; other added tokens: user-defined), the
// merges, the pre-tokenizer's name and the BOS / EOS / padding ids.
//
// The pre-tokenizer is recognised by its split regex: Qwen2's (Qwen2.5, Qwen3) and Llama 3's, or
// GPT-2's byte-level default. Anything else (SentencePiece models, normalizers, other regexes) is
// a one-line error naming it.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "gguf/writer.h"

namespace ridge::checkpoint {

struct HfTokenizerFiles {
  std::string tokenizer_json;         // tokenizer.json's text (required)
  std::string tokenizer_config_json;  // tokenizer_config.json's text ("" when absent)
  std::string chat_template;          // chat_template.jinja's text ("" when absent)
};

// Adds tokenizer.* metadata for a model of n_vocab embedding rows.
Status convert_tokenizer(const HfTokenizerFiles& files, int64_t n_vocab, gguf::Writer& out);

}  // namespace ridge::checkpoint
