// The chat-specific parts of a /v1/chat/completions body: messages (normalised for the model's
// chat template), tools and tool_choice, chat_template_kwargs and reasoning_effort; and the
// output constraints both generation endpoints take (response_format, grammar).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "chat/conversation.h"
#include "server/api_error.h"

namespace ridge::server {

enum class ToolChoice { kAuto, kNone, kRequired, kFunction };

struct ChatOptions {
  chat::Conversation conversation;  // tools left out when tool_choice is "none"
  ToolChoice tool_choice = ToolChoice::kAuto;
  std::string tool_choice_name;     // kFunction: the function the model must call
  bool parallel_tool_calls = true;
  bool has_tools() const { return conversation.tools.is_array() && !conversation.tools.empty(); }
};

// What the output must match (structured outputs). kNone: free text.
struct OutputConstraint {
  enum class Kind { kNone, kJsonObject, kJsonSchema, kGrammar, kRegex };
  Kind kind = Kind::kNone;
  nlohmann::ordered_json schema;  // kJsonSchema
  std::string grammar;    // kGrammar: GBNF text; kRegex: the regular expression
};

// messages, tools, tool_choice, parallel_tool_calls, chat_template_kwargs, reasoning_effort.
std::optional<ApiError> parse_chat_options(const nlohmann::ordered_json& body, ChatOptions& out);
// response_format, grammar (GBNF, a llama.cpp extension) and regex (an SGLang / vLLM extension);
// at most one of them.
std::optional<ApiError> parse_output_constraint(const nlohmann::ordered_json& body,
                                                OutputConstraint& out);

}  // namespace ridge::server
