// Grammars that constrain a chat model's output in its own syntax: a JSON answer
// (response_format) or a tool call (tool_choice "required" / a named function), each after the
// reasoning block the model may write first. Built from the model's output format
// (chat/output_format.h) and the request's schemas (grammar/json_schema.h).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "base/status.h"
#include "chat/output_format.h"

namespace ridge::chat {

// Rule names these grammars add next to the JSON-Schema converter's rules.
inline constexpr std::string_view kConstraintRoot = "ridge-constrained-root";

struct ConstraintContext {
  FormatInfo format;
  bool starts_in_reasoning = false;  // the prompt opened <think>
  bool reasoning_closed = false;     // the prompt closed an empty <think> block: no reasoning
  bool allow_reasoning = true;       // reasoning is separated (--reasoning-format auto)
};

// `gbnf` (whose start rule is "root") preceded by the reasoning block the model may write
// first; parse the result with root = kConstraintRoot.
std::string after_reasoning(const std::string& gbnf, const ConstraintContext& ctx);

// One tool call (several when `parallel`) to one of `tools`, or only to `only_name` when it is
// not empty, in the model's tool-call syntax; parse with root = kConstraintRoot. Usage error
// for a format ridge cannot constrain (it names the format) or a schema the converter refuses.
Result<std::string> tool_call_gbnf(const nlohmann::ordered_json& tools, std::string_view only_name,
                                   bool parallel, const ConstraintContext& ctx);

}  // namespace ridge::chat
