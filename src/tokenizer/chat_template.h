// Chat prompt rendering for the template families ridge knows: ChatML (Qwen), Llama 3 and
// Llama 2 [INST]. The family is recognised from the markers in tokenizer.chat_template (a Jinja
// template we do not execute); anything else falls back to plain text and says so, so the
// caller can warn.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/tokenizer.h"

namespace ridge::gguf {
class File;
}

namespace ridge::tokenizer {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" (others are rendered as given)
  std::string content;
};

enum class ChatStyle { kChatml, kLlama3, kLlama2, kPlain };

class ChatTemplate {
 public:
  // Recognises the family from a Jinja template, or from a bare style name ("chatml",
  // "llama3", "llama2", "plain"). `recognised()` is false for the plain-text fallback.
  static ChatTemplate detect(std::string_view jinja);
  // From tokenizer.chat_template; without one, from the vocabulary's marker tokens.
  static ChatTemplate from_gguf(const gguf::File& file, const Tokenizer* tok);
  // For a user's --chat-template value: a style name, else a usage error.
  static Result<ChatTemplate> from_name(std::string_view name);

  ChatStyle style() const { return style_; }
  bool recognised() const { return style_ != ChatStyle::kPlain; }
  std::string_view name() const;

  // The prompt, with roles and contents marked literal so that only the template's own markers
  // can become control tokens. BOS is not included: encode it with
  // Tokenizer::encode_marked(prompt, /*add_special=*/true), which adds BOS where the vocabulary
  // asks for it.
  MarkedText render(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

 private:
  ChatStyle style_ = ChatStyle::kPlain;
  // Llama 2 variants, read from the template text as llama.cpp does.
  bool llama2_system_ = true;      // <<SYS>> blocks
  bool llama2_bos_inside_ = false;  // "<s>" before every later [INST]
  bool llama2_strip_ = false;       // content.strip()
};

}  // namespace ridge::tokenizer
