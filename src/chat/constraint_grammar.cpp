#include "chat/constraint_grammar.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

namespace ridge::chat {

using nlohmann::ordered_json;

namespace {

using grammar::gbnf_literal;

// Reasoning text may contain anything but the start of its closing marker ("<" runs must be
// followed by another character): close enough to free text. <think> families close with
// "</think>" (text); Gemma 4 with the <channel|> token, Harmony messages with <|end|>: text that
// spells such a marker would end the block for the output parser, so it is excluded too.
constexpr const char* kThinkRules =
    "ridge-think-body ::= ([^<] | \"<\"+ [^</])* \"<\"*\n"
    "ridge-think-ws ::= [ \\t\\n]{0,4}\n";
constexpr const char* kGemmaThoughtRules =
    "ridge-think-body ::= ([^<] | \"<\"+ [^<c])* \"<\"*\n"
    "ridge-think-ws ::= [ \\t\\n]{0,4}\n";
constexpr const char* kHarmonyTextRule = "ridge-harmony-text ::= ([^<] | \"<\"+ [^<|])* \"<\"*\n";

// Harmony: the output starts after the prompt's "<|start|>assistant" with a header; `payload`
// is the constrained message (header included), which an analysis message may precede.
std::string harmony_then(std::string_view payload, const ConstraintContext& ctx) {
  const char* next = "<|end|> <|start|> \"assistant\" ";
  std::string prefix;
  if (ctx.starts_in_reasoning) {
    // Inside an analysis body already: it must end first (at the next header if <|end|> would
    // stop generation; the parser ends a body there too).
    prefix = fmt::format("ridge-harmony-text {}", ctx.harmony_end_stops ? "" : next);
  } else if (ctx.allow_reasoning && !ctx.harmony_end_stops) {
    prefix = fmt::format("(<|channel|> \"analysis\" <|message|> ridge-harmony-text {})? ", next);
  }
  return fmt::format("{}{} ::= {}{}\n", kHarmonyTextRule, kConstraintRoot, prefix, payload);
}

// The rules of kConstraintRoot: the reasoning block the model may write, then `payload`.
std::string reasoning_then(std::string_view payload, const ConstraintContext& ctx) {
  if (ctx.format.tools == OutputFormat::kHarmony) return harmony_then(payload, ctx);
  const bool think = ctx.format.think_tags && ctx.allow_reasoning && !ctx.reasoning_closed;
  if (!think) return fmt::format("{} ::= {}\n", kConstraintRoot, payload);
  const bool gemma = ctx.format.tools == OutputFormat::kGemma4;
  const char* rules = gemma ? kGemmaThoughtRules : kThinkRules;
  const char* open = gemma ? "<|channel> \"thought\"" : "\"<think>\"";
  const char* close = gemma ? "<channel|>" : "\"</think>\"";
  if (ctx.starts_in_reasoning) {
    return fmt::format("{}{} ::= ridge-think-body {} ridge-think-ws {}\n", rules, kConstraintRoot,
                       close, payload);
  }
  return fmt::format("{}{} ::= ({} ridge-think-body {} ridge-think-ws)? {}\n", rules,
                     kConstraintRoot, open, close, payload);
}

// The JSON object one call writes, e.g. {"name": "f", "arguments": {...}}, as a JSON Schema
// (Mistral Nemo: with the 9-alphanumeric "id" its template requires).
ordered_json call_object_schema(const ordered_json& tool, std::string_view args_key,
                                bool with_id = false) {
  const ordered_json& fn = tool["function"];
  ordered_json params = fn.contains("parameters") && fn["parameters"].is_object()
                            ? fn["parameters"]
                            : ordered_json{{"type", "object"}};
  ordered_json props = ordered_json::object();
  props["name"] = {{"const", fn["name"]}};
  props[std::string(args_key)] = std::move(params);
  ordered_json required = {"name", std::string(args_key)};
  if (with_id) {
    props["id"] = {{"type", "string"}, {"pattern", "^[A-Za-z0-9]{9}$"}};
    required.push_back("id");
  }
  return {{"type", "object"},
          {"properties", std::move(props)},
          {"required", std::move(required)},
          {"additionalProperties", false}};
}

// Qwen3-Coder / Qwen3.5 XML calls: <tool_call>\n<function=NAME>\n then one
// <parameter=P>\nVALUE\n</parameter>\n per argument, required ones first in the schema's order
// (each once), optional ones after; values are free text without "</" (the model writes them as
// text; the parser types them from the schema).
std::string xml_calls_gbnf(const ordered_json& tools, std::string_view only_name, bool parallel) {
  std::string g = "ridge-xml-value ::= ([^<] | \"<\"+ [^</])* \"<\"*\n";
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
                         gbnf_literal(name));
    };
    std::string body = gbnf_literal(fn["name"].get<std::string>() + ">\n");
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
  g += fmt::format(
      "ridge-call ::= \"<tool_call>\\n<function=\" ({}) \"</function>\\n</tool_call>\"\n",
      branches);
  g += parallel ? "ridge-calls ::= ridge-call (\"\\n\" ridge-call)*\n"
                : "ridge-calls ::= ridge-call\n";
  return n == 0 ? std::string() : g;
}

// The converter's rules renamed with `prefix` (its start rule `root` becomes prefix + "root"),
// so several schemas' rules can live in one grammar; its shared primitives (j-*) keep their
// names and are written once (`prims` holds those already written).
std::string prefixed_rules(std::string_view gbnf, std::string_view prefix,
                           std::set<std::string>& prims) {
  auto name_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  };
  std::string out;
  size_t line_start = 0;
  while (line_start < gbnf.size()) {
    size_t eol = gbnf.find('\n', line_start);
    if (eol == std::string_view::npos) eol = gbnf.size();
    const std::string_view line = gbnf.substr(line_start, eol - line_start);
    line_start = eol + 1;
    const std::string name(line.substr(0, line.find(' ')));
    if (name.empty() || (name.starts_with("j-") && !prims.insert(name).second)) continue;
    for (size_t i = 0; i < line.size();) {
      const char c = line[i];
      if (c == '"' || c == '[' || c == '{') {  // literals, classes, repetition counts
        const char close = c == '"' ? '"' : c == '[' ? ']' : '}';
        size_t j = i + 1;
        while (j < line.size() && line[j] != close) j += line[j] == '\\' ? 2 : 1;
        j = std::min(j + 1, line.size());
        out.append(line.substr(i, j - i));
        i = j;
      } else if (name_char(c)) {
        size_t j = i;
        while (j < line.size() && name_char(line[j])) ++j;
        const std::string_view id = line.substr(i, j - i);
        if (!id.starts_with("j-")) out.append(prefix);
        out.append(id);
        i = j;
      } else {
        out += c;
        ++i;
      }
    }
    out += '\n';
  }
  return out;
}

// One branch per tool: its name written by `head`, then its arguments by the rule the
// converter (JSON, or Gemma 4's notation) gives it.
using ArgsConverter = std::function<Result<std::string>(
    const ordered_json& params, const std::string& prefix, std::set<std::string>& prims)>;

Result<std::string> per_tool_branches(const ordered_json& tools, std::string_view only_name,
                                      const ArgsConverter& convert,
                                      const std::function<std::string(const std::string&)>& head,
                                      std::string& rules) {
  std::set<std::string> prims;
  std::string branches;
  int n = 0;
  for (const auto& t : tools) {
    const ordered_json& fn = t["function"];
    if (!only_name.empty() && fn["name"] != only_name) continue;
    const std::string name = fn["name"].get<std::string>();
    const ordered_json params = fn.contains("parameters") && fn["parameters"].is_object()
                                    ? fn["parameters"]
                                    : ordered_json{{"type", "object"}};
    const std::string prefix = fmt::format("ridge-t{}-", n++);
    auto r = convert(params, prefix, prims);
    if (!r.ok()) return r.status().with_prefix(fmt::format("tools: '{}'", name));
    rules += *r;
    if (!branches.empty()) branches += " | ";
    branches += fmt::format("{} {}root", head(name), prefix);
  }
  if (n == 0) return Status::usage("tool_choice: no tool to call");
  return branches;
}

Result<std::string> json_args(const ordered_json& params, const std::string& prefix,
                              std::set<std::string>& prims) {
  RIDGE_ASSIGN_OR_RETURN(std::string g, grammar::json_schema_to_gbnf_ordered(params));
  return prefixed_rules(g, prefix, prims);
}

Result<std::string> gemma4_args(const ordered_json& params, const std::string& prefix,
                                std::set<std::string>& /*prims*/) {
  return detail::gemma4_arguments_gbnf(params, prefix);
}

// Formats whose call is one JSON object (Hermes, Llama 3) or a JSON array of them (Mistral
// Nemo), wrapped in the family's markers.
Result<std::string> json_object_calls(const ordered_json& tools, std::string_view only_name,
                                      bool parallel, const ConstraintContext& ctx) {
  std::string open, close, sep, args_key = "arguments";
  const bool nemo = ctx.format.tools == OutputFormat::kMistralNemo;
  if (ctx.format.tools == OutputFormat::kHermes) {
    open = "\"<tool_call>\\n\"";
    close = "\"\\n</tool_call>\"";
    sep = "\"\\n\"";
  } else if (ctx.format.tools == OutputFormat::kLlama3Json) {
    args_key = "parameters";
    parallel = false;  // Llama 3.x writes one call per turn
  } else {
    open = "<\"[TOOL_CALLS]\">";  // then a JSON array of calls
  }
  ordered_json any_of = ordered_json::array();
  for (const auto& t : tools) {
    if (!only_name.empty() && t["function"]["name"] != only_name) continue;
    any_of.push_back(call_object_schema(t, args_key, nemo));
  }
  if (any_of.empty()) return Status::usage("tool_choice: no tool to call");
  ordered_json schema = any_of.size() == 1 ? any_of[0] : ordered_json{{"anyOf", any_of}};
  if (nemo) {
    schema = {{"type", "array"}, {"items", std::move(schema)}, {"minItems", 1}};
    if (!parallel) schema["maxItems"] = 1;
    parallel = false;
  }
  auto json_gbnf = grammar::json_schema_to_gbnf_ordered(schema);
  if (!json_gbnf.ok()) return json_gbnf.status().with_prefix("tools");
  // The converter's start rule becomes one call; ours wraps it in the model's markers.
  std::string g = *json_gbnf + "\n";
  g += fmt::format("ridge-call ::= {} root {}\n", open, close);
  g += parallel ? fmt::format("ridge-calls ::= ridge-call ({} ridge-call)*\n", sep)
                : "ridge-calls ::= ridge-call\n";
  return g + reasoning_then("ridge-calls", ctx);
}

}  // namespace

std::string after_reasoning(const std::string& gbnf, const ConstraintContext& ctx) {
  if (ctx.format.tools == OutputFormat::kHarmony) {
    return gbnf + "\n" + reasoning_then("<|channel|> \"final\" <|message|> root", ctx);
  }
  return gbnf + "\n" + reasoning_then("root", ctx);
}

Result<std::string> tool_call_gbnf(const ordered_json& tools, std::string_view only_name,
                                   bool parallel, const ConstraintContext& ctx) {
  std::string rules;
  std::function<std::string(const std::string&)> head;
  ArgsConverter convert = json_args;
  // Each family's call around `branches` (NAME + arguments, one per tool).
  std::function<std::string(const std::string&)> call;
  switch (ctx.format.tools) {
    case OutputFormat::kQwenXml: {
      std::string g = xml_calls_gbnf(tools, only_name, parallel);
      if (g.empty()) return Status::usage("tool_choice: no tool to call");
      return g + reasoning_then("ridge-calls", ctx);
    }
    case OutputFormat::kHermes:
    case OutputFormat::kLlama3Json:
    case OutputFormat::kMistralNemo: return json_object_calls(tools, only_name, parallel, ctx);
    case OutputFormat::kMistralSmall:
      // [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}, one [TOOL_CALLS] per call.
      head = [](const std::string& n) {
        return fmt::format("{} ridge-call-id? <\"[ARGS]\">", gbnf_literal(n));
      };
      rules = "ridge-call-id ::= <\"[CALL_ID]\"> [A-Za-z0-9]{9}\n";
      call = [](const std::string& b) { return fmt::format("<\"[TOOL_CALLS]\"> ({})", b); };
      break;
    case OutputFormat::kDeepSeekR1:
      head = [](const std::string& n) { return gbnf_literal(n + "\n```json\n"); };
      call = [](const std::string& b) {
        return fmt::format(
            "<｜tool▁call▁begin｜> \"function\" <｜tool▁sep｜> ({}) \"\\n```\" "
            "<｜tool▁call▁end｜>",
            b);
      };
      break;
    case OutputFormat::kHarmony:
      // One commentary message to the function; gpt-oss stops after <|call|>.
      head = [](const std::string& n) {
        return fmt::format("{} <|constrain|> \"json\" <|message|>", gbnf_literal(n + " "));
      };
      call = [](const std::string& b) {
        return fmt::format("<|channel|> \"commentary to=functions.\" ({}) <|call|>", b);
      };
      parallel = false;
      break;
    case OutputFormat::kGemma4:
      // <|tool_call>call:NAME{key:value,...}<tool_call|>, values in the template's notation.
      head = [](const std::string& n) { return gbnf_literal("call:" + n); };
      call = [](const std::string& b) { return fmt::format("<|tool_call> ({}) <tool_call|>", b); };
      convert = gemma4_args;
      break;
    default:
      return Status::usage(fmt::format(
          "tool_choice: ridge cannot force a tool call in this model's format ({}); use "
          "\"auto\"",
          output_format_name(ctx.format.tools)));
  }
  if (ctx.format.tools == OutputFormat::kGemma4) rules += detail::gemma4_value_rules();
  RIDGE_ASSIGN_OR_RETURN(std::string branches,
                         per_tool_branches(tools, only_name, convert, head, rules));
  rules += fmt::format("ridge-call ::= {}\n", call(branches));
  if (ctx.format.tools == OutputFormat::kDeepSeekR1) {
    rules +=
        fmt::format("ridge-calls ::= <｜tool▁calls▁begin｜> ridge-call{} <｜tool▁calls▁end｜>\n",
                    parallel ? " (\"\\n\" ridge-call)*" : "");
  } else {
    rules += parallel ? "ridge-calls ::= ridge-call+\n" : "ridge-calls ::= ridge-call\n";
  }
  return rules + reasoning_then("ridge-calls", ctx);
}

}  // namespace ridge::chat
