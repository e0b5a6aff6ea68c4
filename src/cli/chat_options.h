// The chat-template flags `ridge chat` and `ridge serve` share: --chat-template,
// --chat-template-file, --chat-template-kwargs and --reasoning-format.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "base/status.h"
#include "chat/chat_template.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace ridge::cli {

struct ChatTemplateArgs {
  chat::TemplateChoice choice;
  std::string kwargs_json;                  // --chat-template-kwargs (a JSON object)
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // parsed by load
  std::string reasoning_format = "auto";    // auto: reasoning_content apart; none: in content
  bool separate_reasoning() const { return reasoning_format != "none"; }
};

void add_chat_template_flags(CLI::App& app, ChatTemplateArgs& a);

// Loads the template the flags choose and parses --chat-template-kwargs; warns (stderr) when
// the model has no template ridge can use and the prompt falls back to plain text.
Result<chat::ChatTemplate> load_chat_template(const gguf::File& file,
                                              const tokenizer::Tokenizer& tok,
                                              ChatTemplateArgs& a);

}  // namespace ridge::cli
