#include "chat/constraint_grammar.h"

#include <fmt/format.h>

#include <algorithm>

#include "grammar/json_schema.h"

namespace ridge::chat {

using nlohmann::ordered_json;

namespace {

// A GBNF string literal of `text`.
std::string literal(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

// Thoughts may contain anything but "</" (the closing tag's start): close enough to free text.
constexpr const char* kThinkRules =
    "ridge-think-body ::= ([^<] | \"<\" [^/])*\n"
    "ridge-think-ws ::= [ \\t\\n]{0,4}\n";

// The JSON object one call writes, e.g. {"name": "f", "arguments": {...}}, as a JSON Schema.
ordered_json call_object_schema(const ordered_json& tool, std::string_view args_key) {
  const ordered_json& fn = tool["function"];
  ordered_json params = fn.contains("parameters") && fn["parameters"].is_object()
                            ? fn["parameters"]
                            : ordered_json{{"type", "object"}};
  ordered_json props = ordered_json::object();
  props["name"] = {{"const", fn["name"]}};
  props[std::string(args_key)] = std::move(params);
  return {{"type", "object"},
          {"properties", std::move(props)},
          {"required", {"name", std::string(args_key)}},
          {"additionalProperties", false}};
}

}  // namespace

// The rules of kConstraintRoot: the reasoning block the model may write, then `payload`.
static std::string reasoning_then(std::string_view payload, const ConstraintContext& ctx) {
  const bool think = ctx.format.think_tags && ctx.allow_reasoning && !ctx.reasoning_closed &&
                     ctx.format.tools != OutputFormat::kGemma4;
  if (!think) return fmt::format("{} ::= {}\n", kConstraintRoot, payload);
  if (ctx.starts_in_reasoning) {
    return fmt::format("{}{} ::= ridge-think-body \"</think>\" ridge-think-ws {}\n", kThinkRules,
                       kConstraintRoot, payload);
  }
  return fmt::format("{}{} ::= (\"<think>\" ridge-think-body \"</think>\" ridge-think-ws)? {}\n",
                     kThinkRules, kConstraintRoot, payload);
}

std::string after_reasoning(const std::string& gbnf, const ConstraintContext& ctx) {
  return gbnf + "\n" + reasoning_then("root", ctx);
}

namespace {

// Qwen3-Coder / Qwen3.5 XML calls: <tool_call>\n<function=NAME>\n then one
// <parameter=P>\nVALUE\n</parameter>\n per argument, required ones first in the schema's order
// (each once), optional ones after; values are free text without "</" (the model writes them as
// text; the parser types them from the schema).
std::string xml_calls_gbnf(const ordered_json& tools, std::string_view only_name, bool parallel) {
  std::string g = "ridge-xml-value ::= ([^<] | \"<\" [^/])*\n";
  std::string branches;
  int n = 0;
  for (const auto& t : tools) {
    const ordered_json& fn = t["function"];
    if (!only_name.empty() && fn["name"] != only_name) continue;
    const std::string rule = fmt::format("ridge-xml-fn-{}", n++);
    const ordered_json empty = ordered_json::object();
    const ordered_json& params = fn.contains("parameters") ? fn["parameters"] : empty;
    const ordered_json props = params.value("properties", ordered_json::object());
    const ordered_json required = params.value("required", ordered_json::array());
    auto param = [](const std::string& name) {
      return fmt::format("\"<parameter=\" {} \">\\n\" ridge-xml-value \"\\n</parameter>\\n\"",
                         literal(name));
    };
    std::string body = literal(fn["name"].get<std::string>() + ">\n");
    std::string optional;
    for (const auto& [name, schema] : props.items()) {
      const bool req = std::find(required.begin(), required.end(), name) != required.end();
      std::string& to = req ? body : optional;
      to += req ? " " : (optional.empty() ? "" : " | ");
      to += param(name);
    }
    if (!optional.empty()) body += fmt::format(" ({})*", optional);
    g += fmt::format("{} ::= {}\n", rule, body);
    if (!branches.empty()) branches += " | ";
    branches += rule;
  }
  g += fmt::format("ridge-call ::= \"<tool_call>\\n<function=\" ({}) \"</function>\\n</tool_call>\"\n",
                   branches);
  g += parallel ? "ridge-calls ::= ridge-call (\"\\n\" ridge-call)*\n" : "ridge-calls ::= ridge-call\n";
  return n == 0 ? std::string() : g;
}

}  // namespace

Result<std::string> tool_call_gbnf(const ordered_json& tools, std::string_view only_name,
                                   bool parallel, const ConstraintContext& ctx) {
  if (ctx.format.tools == OutputFormat::kQwenXml) {
    std::string g = xml_calls_gbnf(tools, only_name, parallel);
    if (g.empty()) return Status::usage("tool_choice: no tool to call");
    return g + reasoning_then("ridge-calls", ctx);
  }
  std::string open, close, sep, args_key = "arguments";
  switch (ctx.format.tools) {
    case OutputFormat::kHermes:
      open = "<tool_call>\n";
      close = "\n</tool_call>";
      sep = "\n";
      break;
    case OutputFormat::kLlama3Json:
      args_key = "parameters";
      parallel = false;  // Llama 3.x writes one call per turn
      break;
    default:
      return Status::usage(fmt::format(
          "tool_choice: ridge cannot force a tool call in this model's format ({}); use "
          "\"auto\"", output_format_name(ctx.format.tools)));
  }
  ordered_json any_of = ordered_json::array();
  for (const auto& t : tools) {
    if (!only_name.empty() && t["function"]["name"] != only_name) continue;
    any_of.push_back(call_object_schema(t, args_key));
  }
  if (any_of.empty()) return Status::usage("tool_choice: no tool to call");
  const ordered_json schema = any_of.size() == 1 ? any_of[0] : ordered_json{{"anyOf", any_of}};
  auto json_gbnf = grammar::json_schema_to_gbnf_ordered(schema);
  if (!json_gbnf.ok()) return json_gbnf.status().with_prefix("tools");
  // The converter's start rule becomes one call; ours wraps it in the model's markers.
  std::string g = *json_gbnf + "\n";
  g += fmt::format("ridge-call ::= {} root {}\n", literal(open), literal(close));
  g += parallel ? fmt::format("ridge-calls ::= ridge-call ({} ridge-call)*\n", literal(sep))
                : "ridge-calls ::= ridge-call\n";
  return g + reasoning_then("ridge-calls", ctx);
}

}  // namespace ridge::chat
