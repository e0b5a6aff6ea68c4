// Reading the tokenizer.* metadata keys of a GGUF file into VocabData.
#include "gguf/reader.h"
#include "tokenizer/vocab.h"

namespace ridge::tokenizer {

namespace {

Status read_optional_id(const gguf::File& f, std::string_view key, std::optional<int64_t>* out) {
  if (!f.has(key)) return ok_status();
  RIDGE_ASSIGN_OR_RETURN(int64_t v, f.get_int(key));
  *out = v;
  return ok_status();
}

Status read_optional_bool(const gguf::File& f, std::string_view key, std::optional<bool>* out) {
  if (!f.has(key)) return ok_status();
  RIDGE_ASSIGN_OR_RETURN(bool v, f.get_bool(key));
  *out = v;
  return ok_status();
}

}  // namespace

Result<VocabData> read_vocab_data(const gguf::File& f) {
  VocabData d;
  if (!f.has("tokenizer.ggml.model")) {
    return error("{}: no tokenizer in this file (tokenizer.ggml.model is missing)", f.path());
  }
  RIDGE_ASSIGN_OR_RETURN(d.model, f.get_string("tokenizer.ggml.model"));
  RIDGE_ASSIGN_OR_RETURN(d.pre, f.get_string_or("tokenizer.ggml.pre", ""));
  RIDGE_ASSIGN_OR_RETURN(d.tokens, f.get_string_array("tokenizer.ggml.tokens"));
  if (f.has("tokenizer.ggml.scores")) {
    RIDGE_ASSIGN_OR_RETURN(d.scores, f.get_float_array("tokenizer.ggml.scores"));
  }
  if (f.has("tokenizer.ggml.token_type")) {
    RIDGE_ASSIGN_OR_RETURN(auto types, f.get_int_array("tokenizer.ggml.token_type"));
    d.token_types.reserve(types.size());
    for (int64_t t : types) d.token_types.push_back(static_cast<int32_t>(t));
  }
  if (f.has("tokenizer.ggml.merges")) {
    RIDGE_ASSIGN_OR_RETURN(d.merges, f.get_string_array("tokenizer.ggml.merges"));
    d.has_merges = true;
  }
  struct IdKey {
    const char* key;
    std::optional<int64_t>* out;
  };
  const IdKey ids[] = {
      {"tokenizer.ggml.bos_token_id", &d.bos},     {"tokenizer.ggml.eos_token_id", &d.eos},
      {"tokenizer.ggml.eot_token_id", &d.eot},     {"tokenizer.ggml.eom_token_id", &d.eom},
      {"tokenizer.ggml.unknown_token_id", &d.unk}, {"tokenizer.ggml.padding_token_id", &d.pad},
      {"tokenizer.ggml.fim_pre_token_id", &d.fim_pre}, {"tokenizer.ggml.fim_suf_token_id", &d.fim_suf},
      {"tokenizer.ggml.fim_mid_token_id", &d.fim_mid}, {"tokenizer.ggml.fim_pad_token_id", &d.fim_pad},
      {"tokenizer.ggml.fim_rep_token_id", &d.fim_rep}, {"tokenizer.ggml.fim_sep_token_id", &d.fim_sep},
  };
  for (const auto& k : ids) RIDGE_RETURN_IF_ERROR(read_optional_id(f, k.key, k.out));
  RIDGE_RETURN_IF_ERROR(read_optional_bool(f, "tokenizer.ggml.add_bos_token", &d.add_bos));
  RIDGE_RETURN_IF_ERROR(read_optional_bool(f, "tokenizer.ggml.add_eos_token", &d.add_eos));
  RIDGE_RETURN_IF_ERROR(read_optional_bool(f, "tokenizer.ggml.add_space_prefix", &d.add_space_prefix));
  return d;
}

}  // namespace ridge::tokenizer
