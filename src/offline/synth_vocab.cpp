#include "offline/synth_vocab.h"

#include <string>
#include <vector>

#include "gguf/reader.h"
#include "tokenizer/gguf_vocab.h"

namespace ridge::offline {
namespace {
constexpr int32_t kTypeUnused = 5;
}  // namespace

Result<int64_t> copy_tokenizer_metadata(const gguf::File& from, gguf::Writer& to, int64_t n_vocab_min) {
  RIDGE_RETURN_IF_ERROR(tokenizer::copy_tokenizer_metadata(from, to));
  RIDGE_ASSIGN_OR_RETURN(std::vector<std::string> tokens, from.get_string_array("tokenizer.ggml.tokens"));
  const auto n_tokens = static_cast<int64_t>(tokens.size());
  if (n_tokens >= n_vocab_min) return n_tokens;
  // Pad like real Qwen files do ([PAD151643] ...): same arrays, longer.
  for (int64_t i = n_tokens; i < n_vocab_min; ++i) tokens.push_back("[PAD" + std::to_string(i) + "]");
  to.set("tokenizer.ggml.tokens", gguf::make_string_array(tokens));
  if (from.has("tokenizer.ggml.token_type")) {
    RIDGE_ASSIGN_OR_RETURN(std::vector<int64_t> types, from.get_int_array("tokenizer.ggml.token_type"));
    std::vector<int32_t> t(types.begin(), types.end());
    t.resize(static_cast<size_t>(n_vocab_min), kTypeUnused);
    to.set("tokenizer.ggml.token_type", gguf::make_i32_array(t));
  }
  if (from.has("tokenizer.ggml.scores")) {
    RIDGE_ASSIGN_OR_RETURN(std::vector<float> scores, from.get_float_array("tokenizer.ggml.scores"));
    scores.resize(static_cast<size_t>(n_vocab_min), -1e9f);
    to.set("tokenizer.ggml.scores", gguf::make_f32_array(scores));
  }
  return n_vocab_min;
}

}  // namespace ridge::offline
