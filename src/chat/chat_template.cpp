#include "chat/chat_template.h"

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "chat/jinja/template.h"
#include "gguf/reader.h"

namespace ridge::chat {

using nlohmann::ordered_json;

namespace {

constexpr size_t kMaxTemplateBytes = 4u << 20;

Result<std::string> read_template_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::usage(fmt::format("--chat-template-file: cannot open '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > kMaxTemplateBytes) {
    return Status::usage(fmt::format("--chat-template-file: '{}' is larger than {} MiB", path,
                                     kMaxTemplateBytes >> 20));
  }
  if (text.empty()) return Status::usage(fmt::format("--chat-template-file: '{}' is empty", path));
  return text;
}

std::string text_of(const ordered_json& content) {
  return content.is_string() ? content.get<std::string>() : std::string();
}

}  // namespace

ChatTemplate::ChatTemplate(const ChatTemplate&) = default;
ChatTemplate& ChatTemplate::operator=(const ChatTemplate&) = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

Result<ChatTemplate> ChatTemplate::from_jinja(std::string source, std::string bos_token,
                                              std::string eos_token) {
  auto parsed = jinja::Template::parse(source);
  if (!parsed.ok()) return parsed.status();
  ChatTemplate t;
  t.jinja_ = std::make_shared<const jinja::Template>(std::move(*parsed));
  t.format_ = detect_output_format(source);
  t.source_ = std::move(source);
  t.bos_token_ = std::move(bos_token);
  t.eos_token_ = std::move(eos_token);
  t.description_ = "Jinja template";
  return t;
}

ChatTemplate ChatTemplate::builtin(tokenizer::ChatTemplate style) {
  ChatTemplate t;
  t.builtin_ = style;
  t.description_ = fmt::format("built-in {}", style.name());
  return t;
}

Result<ChatTemplate> ChatTemplate::load(const gguf::File& file, const tokenizer::Tokenizer& tok,
                                        const TemplateChoice& choice) {
  const std::string bos(tok.bos() >= 0 ? tok.token_text(tok.bos()) : "");
  const std::string eos(tok.eos() >= 0 ? tok.token_text(tok.eos()) : "");
  if (!choice.jinja_file.empty()) {
    auto text = read_template_file(choice.jinja_file);
    if (!text.ok()) return text.status();
    auto t = from_jinja(std::move(*text), bos, eos);
    if (!t.ok()) return t.status().with_prefix(fmt::format("--chat-template-file {}", choice.jinja_file));
    t->description_ = fmt::format("Jinja template from {}", choice.jinja_file);
    return t;
  }
  if (!choice.style.empty()) {
    auto style = tokenizer::ChatTemplate::from_name(choice.style);
    if (!style.ok()) return style.status();
    return builtin(*style);
  }
  auto source = file.get_string_or("tokenizer.chat_template", "");
  if (source.ok() && !source->empty()) {
    auto t = from_jinja(*source, bos, eos);
    if (!t.ok()) {
      return t.status().with_prefix(
          "the model's tokenizer.chat_template (use --chat-template-file or --chat-template to "
          "replace it)");
    }
    t->description_ = "the model's Jinja template";
    return t;
  }
  return builtin(tokenizer::ChatTemplate::from_gguf(file, &tok));
}

Result<RenderedPrompt> ChatTemplate::render(const Conversation& conv) const {
  RenderedPrompt out;
  if (jinja_) {
    ordered_json trusted = {{"bos_token", bos_token_},
                            {"eos_token", eos_token_},
                            {"add_generation_prompt", conv.add_generation_prompt}};
    ordered_json untrusted = {{"messages", conv.messages}};
    if (!conv.tools.is_null()) untrusted["tools"] = conv.tools;
    for (const auto& [key, value] : conv.kwargs.items()) {
      if (trusted.contains(key) || untrusted.contains(key)) {
        return Status::usage(fmt::format(
            "chat_template_kwargs: '{}' would replace one of the template's own variables", key));
      }
      untrusted[key] = value;
    }
    auto text = jinja_->render(trusted, untrusted);
    if (!text.ok()) return text.status();
    out.text = std::move(*text);
  } else {
    if (conv.tools.is_array() && !conv.tools.empty()) {
      return Status::usage(fmt::format(
          "tools: this model has no chat template that can describe tools ({}); give one with "
          "--chat-template-file", description_));
    }
    std::vector<tokenizer::ChatMessage> msgs;
    for (const auto& m : conv.messages) {
      std::string role = m.value("role", "");
      if (role == "developer") role = "system";
      msgs.push_back({std::move(role), text_of(m.value("content", ordered_json()))});
    }
    out.text = builtin_.render(msgs, conv.add_generation_prompt);
  }
  out.starts_in_reasoning = prompt_ends_in_reasoning(out.text.text, format_);
  if (format_.think_tags) {
    std::string_view t = out.text.text;
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
    out.reasoning_closed = t.ends_with("</think>");
  }
  return out;
}

std::vector<int32_t> encode_prompt(const tokenizer::Tokenizer& tok,
                                   const tokenizer::MarkedText& prompt) {
  const std::string_view bos_text = tok.bos() >= 0 ? tok.token_text(tok.bos()) : "";
  const auto& spans = prompt.literal_spans;
  const bool has_bos = !bos_text.empty() && prompt.text.starts_with(bos_text) &&
                       (spans.empty() || spans.front().first >= bos_text.size());
  return tok.encode_marked(prompt, /*add_special=*/!has_bos);
}

}  // namespace ridge::chat
