#include "model/synth_vocab.h"

#include <string>
#include <vector>

#include "gguf/reader.h"

namespace ridge::model {
namespace {

constexpr int32_t kTypeNormal = 1;
constexpr int32_t kTypeControl = 3;
constexpr int32_t kTypeUnused = 5;

// GPT-2's reversible byte -> printable code point mapping, as UTF-8 text.
std::string byte_to_unicode_text(int b) {
  const bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  uint32_t cp = static_cast<uint32_t>(b);
  if (!printable) {
    int n = 0;  // index among the non-printable bytes, mapped to 256 + n
    for (int x = 0; x < b; ++x) {
      const bool p = (x >= '!' && x <= '~') || (x >= 0xa1 && x <= 0xac) || (x >= 0xae && x <= 0xff);
      if (!p) ++n;
    }
    cp = 256u + static_cast<uint32_t>(n);
  }
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return out;
}

constexpr std::string_view kChatmlTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
constexpr std::string_view kLlama3Template =
    "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

}  // namespace

Result<int64_t> copy_tokenizer_metadata(const gguf::File& from, gguf::Writer& to, int64_t n_vocab_min) {
  RIDGE_ASSIGN_OR_RETURN(std::vector<std::string> tokens, from.get_string_array("tokenizer.ggml.tokens"));
  const int64_t n_tokens = static_cast<int64_t>(tokens.size());
  for (const auto& [key, value] : from.metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) to.set(key, value);
  }
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

void write_builtin_byte_tokenizer(gguf::Writer& w, int64_t n_vocab, std::string_view chat_style) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(byte_to_unicode_text(b));
    types.push_back(kTypeNormal);
  }
  const bool llama3 = chat_style == "llama3";
  const std::vector<std::string> specials =
      llama3 ? std::vector<std::string>{"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                                        "<|end_header_id|>", "<|eot_id|>"}
             : std::vector<std::string>{"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  const auto first_special = static_cast<int32_t>(tokens.size());
  for (const auto& s : specials) {
    tokens.push_back(s);
    types.push_back(kTypeControl);
  }
  for (auto i = static_cast<int64_t>(tokens.size()); i < n_vocab; ++i) {
    tokens.push_back("[PAD" + std::to_string(i) + "]");
    types.push_back(kTypeUnused);
  }
  w.set("tokenizer.ggml.model", gguf::make_string("gpt2"));
  w.set("tokenizer.ggml.pre", gguf::make_string("default"));
  w.set("tokenizer.ggml.tokens", gguf::make_string_array(tokens));
  w.set("tokenizer.ggml.token_type", gguf::make_i32_array(types));
  w.set("tokenizer.ggml.merges", gguf::make_string_array({}));
  if (llama3) {
    w.set("tokenizer.ggml.bos_token_id", gguf::make_u32(static_cast<uint32_t>(first_special)));
    w.set("tokenizer.ggml.eos_token_id", gguf::make_u32(static_cast<uint32_t>(first_special + 1)));
    w.set("tokenizer.ggml.eot_token_id", gguf::make_u32(static_cast<uint32_t>(first_special + 4)));
    w.set("tokenizer.ggml.add_bos_token", gguf::make_bool(true));
    w.set("tokenizer.chat_template", gguf::make_string(std::string(kLlama3Template)));
  } else {
    w.set("tokenizer.ggml.bos_token_id", gguf::make_u32(static_cast<uint32_t>(first_special)));
    w.set("tokenizer.ggml.eos_token_id", gguf::make_u32(static_cast<uint32_t>(first_special)));
    w.set("tokenizer.ggml.eot_token_id", gguf::make_u32(static_cast<uint32_t>(first_special + 2)));
    w.set("tokenizer.ggml.add_bos_token", gguf::make_bool(false));
    w.set("tokenizer.chat_template", gguf::make_string(std::string(kChatmlTemplate)));
  }
}

}  // namespace ridge::model
