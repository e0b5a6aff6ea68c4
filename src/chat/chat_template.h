// The model's chat template: the Jinja `tokenizer.chat_template` of the GGUF file (or a file the
// user names), rendered by our interpreter (chat/jinja), with the built-in ChatML / Llama 3 /
// Llama 2 renderers only as the fallback for files without a template. It also says how the
// model writes reasoning and tool calls (chat/output_format.h), so the server can parse them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/conversation.h"
#include "chat/output_format.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ridge::gguf {
class File;
}

namespace ridge::chat {

namespace jinja {
class Template;
}

struct TemplateChoice {
  std::string jinja_file;  // --chat-template-file: a Jinja template that replaces the model's
  std::string style;       // --chat-template: a built-in style (chatml, llama3, llama2, plain)
};

class ChatTemplate {
 public:
  // The user's choice first, then the model's own template, then the built-in style its
  // vocabulary suggests. A Jinja template the interpreter cannot run is an error naming the
  // construct and its line (load time, not request time).
  static Result<ChatTemplate> load(const gguf::File& file, const tokenizer::Tokenizer& tok,
                                   const TemplateChoice& choice);
  // From Jinja source; bos/eos are the texts of the vocabulary's BOS/EOS tokens ("" if none).
  static Result<ChatTemplate> from_jinja(std::string source, std::string bos_token,
                                         std::string eos_token);
  static ChatTemplate builtin(tokenizer::ChatTemplate style);

  ChatTemplate(const ChatTemplate&);
  ChatTemplate& operator=(const ChatTemplate&);
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ~ChatTemplate();

  // Usage errors (a 400 in the server): the template's raise_exception message, a kwarg that
  // would replace one of the template's own variables, tools for a built-in renderer.
  Result<RenderedPrompt> render(const Conversation& conv) const;

  bool is_jinja() const { return jinja_ != nullptr; }
  // "the model's Jinja template", "Jinja template from FILE", "built-in chatml", ...
  const std::string& description() const { return description_; }
  // Plain text fallback: the model had nothing ridge recognised (callers warn).
  bool is_plain_fallback() const { return !jinja_ && !builtin_.recognised(); }
  const FormatInfo& output_format() const { return format_; }
  const std::string& source() const { return source_; }

 private:
  ChatTemplate() = default;

  std::shared_ptr<const jinja::Template> jinja_;
  tokenizer::ChatTemplate builtin_;
  std::string source_;  // the Jinja text ("" for a built-in renderer)
  std::string bos_token_, eos_token_;
  std::string description_;
  FormatInfo format_;
};

// The prompt's token ids: BOS added where the vocabulary asks for it, unless the template wrote
// the BOS text itself (message text that starts with it is not BOS: literal text never becomes a
// control token).
std::vector<int32_t> encode_prompt(const tokenizer::Tokenizer& tok,
                                   const tokenizer::MarkedText& prompt);

}  // namespace ridge::chat
