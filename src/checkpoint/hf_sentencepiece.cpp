// tokenizer.model into GGUF tokenizer metadata, as llama.cpp's converter writes a SentencePiece
// model: tokenizer.ggml.model "llama", every piece's text and score, its type (unknown, control,
// unused and byte as the model marks them; a user-defined piece as normal, as llama.cpp's
// converter leaves it), padding to the model's vocabulary with "[PAD<id>]" (score -1000,
// unused), tokenizer.json's added tokens (control when special, else user-defined; score -1000),
// add_space_prefix from the normalizer, and the special ids: the trainer spec's, replaced by
// tokenizer_config.json's where it names them.
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "checkpoint/hf_tokenizer.h"
#include "checkpoint/json_fields.h"
#include "checkpoint/sentencepiece_model.h"

namespace ridge::checkpoint {
namespace {

using json = nlohmann::json;

constexpr float kAddedScore = -1000.0f;

}  // namespace

Status convert_sentencepiece(const HfTokenizerFiles& files, int64_t n_vocab, gguf::Writer& w) {
  const auto* data = reinterpret_cast<const uint8_t*>(files.tokenizer_model.data());
  RIDGE_ASSIGN_OR_RETURN(const SentencePieceModel m,
                         parse_sentencepiece_model(std::span(data, files.tokenizer_model.size())));
  if (m.model_type != 2) {
    return error("tokenizer.model: model type {} (convert reads SentencePiece BPE models, type 2; a unigram "
                 "model is another tokenizer)", m.model_type);
  }
  const int64_t n_pieces = static_cast<int64_t>(m.pieces.size());
  // Added tokens of tokenizer.json (its ids may run past the pieces).
  std::vector<AddedToken> added;
  if (!files.tokenizer_json.empty()) {
    const json tok = json::parse(files.tokenizer_json, nullptr, false);
    if (!tok.is_object()) return error("tokenizer.json: not a JSON object");
    RIDGE_ASSIGN_OR_RETURN(added, added_tokens_of(tok));
  }
  // A GGUF's tokens are the embedding's rows (llama.cpp loads no other count).
  if (n_pieces > n_vocab) {
    return error("tokenizer.model: {} pieces, more than the model's {} embedding rows (vocab_size)", n_pieces, n_vocab);
  }
  for (const AddedToken& a : added) {
    if (a.id >= n_vocab) return error("tokenizer.json: added token id {} past the model's {} embedding rows", a.id, n_vocab);
  }
  const int64_t n_tokens = n_vocab;
  if (n_tokens > (int64_t{1} << 24)) return error("tokenizer.model: {} tokens is too many", n_tokens);
  std::vector<std::string> tokens(static_cast<size_t>(n_tokens));
  std::vector<float> scores(static_cast<size_t>(n_tokens), kAddedScore);
  std::vector<int32_t> types(static_cast<size_t>(n_tokens), kTokenUnused);
  for (int64_t i = 0; i < n_tokens; ++i) {
    const auto k = static_cast<size_t>(i);
    if (i < n_pieces) {
      tokens[k] = m.pieces[k].piece;
      scores[k] = m.pieces[k].score;
      types[k] = m.pieces[k].type == kTokenUserDefined ? kTokenNormal : m.pieces[k].type;
    } else {
      tokens[k] = "[PAD" + std::to_string(i) + "]";
    }
  }
  for (const AddedToken& a : added) {
    const auto k = static_cast<size_t>(a.id);
    if (a.id >= n_pieces) {
      tokens[k] = a.text;
      scores[k] = kAddedScore;
    } else if (tokens[k] != a.text) {
      return error("tokenizer.json: added token {} '{}' is '{}' in tokenizer.model", a.id, a.text, tokens[k]);
    }
    types[k] = a.type;
  }
  w.set("tokenizer.ggml.model", gguf::make_string("llama"));
  w.set("tokenizer.ggml.pre", gguf::make_string("default"));
  w.set("tokenizer.ggml.tokens", gguf::make_string_array(tokens));
  w.set("tokenizer.ggml.scores", gguf::make_f32_array(scores));
  w.set("tokenizer.ggml.token_type", gguf::make_i32_array(types));
  w.set("tokenizer.ggml.add_space_prefix", gguf::make_bool(m.add_dummy_prefix));
  const std::pair<int32_t, const char*> ids[] = {{m.unk_id, "tokenizer.ggml.unknown_token_id"},
                                                 {m.bos_id, "tokenizer.ggml.bos_token_id"},
                                                 {m.eos_id, "tokenizer.ggml.eos_token_id"},
                                                 {m.pad_id, "tokenizer.ggml.padding_token_id"}};
  for (const auto& [id, key] : ids) {
    if (id >= 0 && id < n_tokens) w.set(key, gguf::make_u32(static_cast<uint32_t>(id)));
  }
  std::map<std::string, int64_t> id_of;
  for (int64_t i = n_tokens - 1; i >= 0; --i) id_of[tokens[static_cast<size_t>(i)]] = i;  // the first id of a text
  return add_tokenizer_config(files, id_of, w);
}

}  // namespace ridge::checkpoint
