// A Hugging Face tokenizer (tokenizer.json, with tokenizer_config.json's special tokens and chat
// template) as GGUF tokenizer metadata in llama.cpp's form: byte-level BPE ("gpt2"), the tokens
// by id (padded to the model's vocabulary with "[PAD<id>]" tokens, as llama.cpp's converter
// does), their types (added special tokens: control; other added tokens: user-defined), the
// merges, the pre-tokenizer's name and the BOS / EOS / padding ids.
//
// The pre-tokenizer is recognised by its split regex: Qwen2's (Qwen2.5, Qwen3) and Llama 3's, or
// GPT-2's byte-level default. Anything else (normalizers, other regexes) is a one-line error
// naming it.
//
// A folder with tokenizer.model (Llama 2, Mistral, ...: SentencePiece) is converted from it as
// llama.cpp's converter does (hf_sentencepiece.cpp): the "llama" tokenizer, the pieces' texts,
// scores and types, add_space_prefix from its normalizer; tokenizer.json then only adds tokens.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/status.h"
#include "gguf/writer.h"

namespace ridge::checkpoint {

struct HfTokenizerFiles {
  std::string tokenizer_json;         // tokenizer.json's text (required without tokenizer.model)
  std::string tokenizer_config_json;  // tokenizer_config.json's text ("" when absent)
  std::string chat_template;          // chat_template.jinja's text ("" when absent)
  std::string tokenizer_model;        // tokenizer.model's bytes ("" when absent)
};

// Adds tokenizer.* metadata for a model of n_vocab embedding rows.
Status convert_tokenizer(const HfTokenizerFiles& files, int64_t n_vocab, gguf::Writer& out);

// Both converters' last step: the BOS / EOS / padding / unknown ids of tokenizer_config.json's
// special tokens (looked up in id_of), add_bos_token and add_eos_token, and the chat template.
Status add_tokenizer_config(const HfTokenizerFiles& files, const std::map<std::string, int64_t>& id_of,
                            gguf::Writer& w);
// SentencePiece's: the tokens from tokenizer.model (hf_sentencepiece.cpp).
Status convert_sentencepiece(const HfTokenizerFiles& files, int64_t n_vocab, gguf::Writer& w);

}  // namespace ridge::checkpoint
