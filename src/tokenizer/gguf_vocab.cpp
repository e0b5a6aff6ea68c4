#include "tokenizer/gguf_vocab.h"

#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "tokenizer/unicode.h"

namespace ridge::tokenizer {

namespace {

constexpr int32_t kNormal = 1, kControl = 3;

constexpr std::string_view kChatmlSpecials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
constexpr std::string_view kLlama3Specials[] = {"<|begin_of_text|>", "<|end_of_text|>",
                                                "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};

// Minimal Jinja templates in the shape real checkpoints use, so chat_template detection and
// llama.cpp's own template matcher both recognise them.
constexpr std::string_view kChatmlTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}";
constexpr std::string_view kLlama3Template =
    "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

bool is_llama3(std::string_view style) { return style == "llama3"; }

// The word a filler token stands for: " " and the id written in base 100 with one
// consonant-vowel syllable per digit (unique per id, e.g. " kovu"), so text sampled from a
// random-weight model prints as visible nonsense words rather than nothing. Byte-level BPE
// writes the space as U+0120.
std::string filler_word(int64_t id) {
  static constexpr char kConsonants[] = "bdfghjklmnprstvwxyzc";  // 20
  static constexpr char kVowels[] = "aeiou";                    // 5
  std::string digits;
  do {
    const auto d = static_cast<size_t>(id % 100);
    digits.insert(0, {kConsonants[d / 5], kVowels[d % 5]});
    id /= 100;
  } while (id > 0);
  return "\u0120" + digits;
}

}  // namespace

Status copy_tokenizer_metadata(const gguf::File& from, gguf::Writer& to) {
  if (!from.has("tokenizer.ggml.model") || !from.has("tokenizer.ggml.tokens")) {
    return error("{}: no tokenizer to copy (tokenizer.ggml.model/tokens missing)", from.path());
  }
  for (const auto& [key, value] : from.metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) to.set(key, value);
  }
  return ok_status();
}

int64_t builtin_byte_tokenizer_min_vocab(std::string_view chat_style) {
  return 256 + static_cast<int64_t>(is_llama3(chat_style) ? std::size(kLlama3Specials)
                                                           : std::size(kChatmlSpecials));
}

void write_builtin_byte_tokenizer(gguf::Writer& w, int64_t n_vocab, std::string_view chat_style) {
  const bool llama3 = is_llama3(chat_style);
  const ByteUnicodeMap bytes;
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(bytes.encode(std::string(1, static_cast<char>(b))));
    types.push_back(kNormal);
  }
  const auto first = static_cast<uint32_t>(tokens.size());
  auto add_specials = [&](const auto& list) {
    for (std::string_view s : list) {
      tokens.emplace_back(s);
      types.push_back(kControl);
    }
  };
  if (llama3) {
    add_specials(kLlama3Specials);
  } else {
    add_specials(kChatmlSpecials);
  }
  for (auto i = static_cast<int64_t>(tokens.size()); i < n_vocab; ++i) {
    tokens.push_back(filler_word(i));
    types.push_back(kNormal);
  }
  w.set("tokenizer.ggml.model", gguf::make_string("gpt2"));
  w.set("tokenizer.ggml.pre", gguf::make_string("default"));
  w.set("tokenizer.ggml.tokens", gguf::make_string_array(tokens));
  w.set("tokenizer.ggml.token_type", gguf::make_i32_array(types));
  w.set("tokenizer.ggml.merges", gguf::make_string_array({}));
  // chatml: <|endoftext|> is BOS and EOS (as in Qwen), <|im_end|> ends a turn.
  w.set("tokenizer.ggml.bos_token_id", gguf::make_u32(first));
  w.set("tokenizer.ggml.eos_token_id", gguf::make_u32(llama3 ? first + 1 : first));
  w.set("tokenizer.ggml.eot_token_id", gguf::make_u32(llama3 ? first + 4 : first + 2));
  w.set("tokenizer.ggml.padding_token_id", gguf::make_u32(llama3 ? first + 1 : first));
  w.set("tokenizer.ggml.add_bos_token", gguf::make_bool(llama3));
  w.set("tokenizer.chat_template", gguf::make_string(std::string(llama3 ? kLlama3Template : kChatmlTemplate)));
}

}  // namespace ridge::tokenizer
