#include "cli/chat_options.h"

#include <fmt/format.h>

#include "base/log.h"

namespace ridge::cli {

void add_chat_template_flags(CLI::App& app, ChatTemplateArgs& a) {
  app.add_option("--chat-template", a.choice.style,
                 "built-in template instead of the model's: chatml, llama3, llama2 or plain");
  app.add_option("--chat-template-file", a.choice.jinja_file,
                 "Jinja chat template file that replaces the model's tokenizer.chat_template");
  app.add_option("--chat-template-kwargs", a.kwargs_json,
                 "extra template variables as a JSON object, e.g. '{\"enable_thinking\": false}'");
  app.add_option("--reasoning-format", a.reasoning_format,
                 "auto: reasoning apart from the answer (reasoning_content); none: left in the text")
      ->check(CLI::IsMember({"auto", "none"}))
      ->capture_default_str();
}

Result<chat::ChatTemplate> load_chat_template(const gguf::File& file,
                                              const tokenizer::Tokenizer& tok,
                                              ChatTemplateArgs& a) {
  if (!a.choice.style.empty() && !a.choice.jinja_file.empty()) {
    return Status::usage("--chat-template and --chat-template-file cannot both be given");
  }
  if (!a.kwargs_json.empty()) {
    a.kwargs = nlohmann::ordered_json::parse(a.kwargs_json, nullptr, /*allow_exceptions=*/false);
    if (!a.kwargs.is_object()) {
      return Status::usage("--chat-template-kwargs must be a JSON object, e.g. "
                           "'{\"enable_thinking\": false}'");
    }
  }
  auto t = chat::ChatTemplate::load(file, tok, a.choice);
  if (!t.ok()) return t.status();
  if (t->is_plain_fallback()) {
    log_warn("the model has no chat template ridge can use: chat prompts are plain text (see "
             "--chat-template-file)");
  }
  return t;
}

}  // namespace ridge::cli
