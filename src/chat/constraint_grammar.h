// Grammars that constrain a chat model's output in its own syntax: a JSON answer
// (response_format) or a tool call (tool_choice "required" / a named function), each after the
// reasoning block the model may write first. Built from the model's output format
// (chat/output_format.h) and the request's schemas (grammar/json_schema.h). Markers that are
// special tokens in the family's vocabulary ([TOOL_CALLS], <|channel|>, <｜tool▁sep｜>,
// <|tool_call>, ...) are token references (docs/grammar.md): parse the grammar with the model's
// TokenResolver.
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
  bool starts_in_reasoning = false;  // the prompt opened <think> (Harmony: an analysis message)
  bool reasoning_closed = false;     // the prompt closed an empty <think> block: no reasoning
  bool allow_reasoning = true;       // reasoning is separated (--reasoning-format auto)
  // Harmony: whether <|end|> ends generation. A vocabulary with <|return|> and <|call|> drops it
  // from its end-of-generation tokens (tokenizer/vocab.cpp, as llama.cpp does), so an analysis
  // message may precede the constrained one (false); one that keeps it stops after an analysis
  // message, so the constrained message must come first (true).
  bool harmony_end_stops = true;
};

// `gbnf` (whose start rule is "root") preceded by the reasoning block the model may write
// first (Harmony: `gbnf` is the body of the final message); parse the result with
// root = kConstraintRoot.
std::string after_reasoning(const std::string& gbnf, const ConstraintContext& ctx);

// One tool call (several when `parallel` and the family writes several) to one of `tools`, or
// only to `only_name` when it is not empty, in the model's tool-call syntax; parse with
// root = kConstraintRoot. Usage error for a format ridge cannot constrain (it names the format)
// or a schema the converter refuses (Gemma 4's notation supports a subset: see
// docs/chat_output.md).
Result<std::string> tool_call_gbnf(const nlohmann::ordered_json& tools, std::string_view only_name,
                                   bool parallel, const ConstraintContext& ctx);

namespace detail {
// Rules for one tool's arguments in Gemma 4's notation (`{key:value,...}`, strings between
// <|"|> tokens); the start rule is `prefix` + "root", and they use gemma4_value_rules() (add
// those once). Usage error naming the JSON pointer for a schema outside the supported subset.
Result<std::string> gemma4_arguments_gbnf(const nlohmann::ordered_json& params,
                                          const std::string& prefix);
std::string gemma4_value_rules();
}  // namespace detail

}  // namespace ridge::chat
