#include "server/chat_request.h"

#include <fmt/format.h>

#include "server/json_fields.h"

namespace ridge::server {

using json = nlohmann::ordered_json;

namespace {

constexpr size_t kMaxTools = 1024;

// Text of a message's content: a string, or text parts joined by newlines (as vLLM does).
std::optional<ApiError> message_text(const json& content, const std::string& where,
                                     std::string& out) {
  if (content.is_string()) {
    out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return wrong_type(where, content, "a string or an array of parts");
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string pw = fmt::format("{}[{}]", where, i);
    if (!part.is_object()) return wrong_type(pw, part, "an object");
    auto type = part.find("type");
    auto text = part.find("text");
    if (type == part.end() || *type != "text") {
      return invalid_param(pw + ".type", fmt::format("'{}.type' must be \"text\" (only text "
                                                     "content is supported)", pw));
    }
    if (text == part.end() || !text->is_string()) {
      return invalid_param(pw + ".text", fmt::format("'{}.text' must be a string", pw));
    }
    if (i > 0) out += '\n';
    out += text->get<std::string>();
  }
  return std::nullopt;
}

// An assistant's past tool calls, as OpenAI sends them; arguments that are a JSON object's text
// become that object (the form chat templates expect, as vLLM and llama.cpp pass them).
std::optional<ApiError> parse_tool_calls(const json& calls, const std::string& where,
                                         json& out) {
  if (!calls.is_array()) return wrong_type(where, calls, "an array");
  out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const json& c = calls[i];
    const std::string cw = fmt::format("{}[{}]", where, i);
    if (!c.is_object()) return wrong_type(cw, c, "an object");
    const json* fn = json_field(c, "function");
    if (!fn || !fn->is_object()) {
      return invalid_param(cw + ".function", fmt::format("'{}.function' must be an object", cw));
    }
    const json* name = json_field(*fn, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty()) {
      return invalid_param(cw + ".function.name",
                           fmt::format("'{}.function.name' must be a non-empty string", cw));
    }
    json args = json::object();
    if (const json* a = json_field(*fn, "arguments")) {
      if (a->is_string()) {
        json parsed = json::parse(a->get<std::string>(), nullptr, /*allow_exceptions=*/false);
        args = parsed.is_object() ? std::move(parsed) : *a;
      } else if (a->is_object()) {
        args = *a;
      } else {
        return wrong_type(cw + ".function.arguments", *a, "a string (JSON text) or an object");
      }
    }
    json call = json::object();
    if (const json* id = json_field(c, "id")) {
      if (!id->is_string()) return wrong_type(cw + ".id", *id, "a string");
      call["id"] = *id;
    }
    call["type"] = "function";
    call["function"] = {{"name", *name}, {"arguments", std::move(args)}};
    out.push_back(std::move(call));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_message(const json& m, const std::string& where, json& out) {
  if (!m.is_object()) return wrong_type(where, m, "an object");
  auto role = m.find("role");
  if (role == m.end() || !role->is_string()) {
    return invalid_param(where + ".role", fmt::format("'{}.role' must be a string", where));
  }
  const std::string r = role->get<std::string>();
  if (r != "system" && r != "developer" && r != "user" && r != "assistant" && r != "tool") {
    return invalid_param(where + ".role",
                         fmt::format("'{}.role' = '{}' is not one of system, developer, user, "
                                     "assistant, tool", where, r));
  }
  out = json::object();
  out["role"] = r;
  for (const auto& [key, value] : m.items()) {
    if (key == "role" || key == "content" || key == "refusal") continue;
    const std::string kw = where + "." + key;
    if (key == "name" || key == "tool_call_id" ||
        ((key == "reasoning_content" || key == "reasoning") && r == "assistant")) {
      if (value.is_null()) continue;
      if (!value.is_string()) return wrong_type(kw, value, "a string");
      out[key == "reasoning" ? "reasoning_content" : key] = value;
    } else if (key == "tool_calls" && r == "assistant") {
      if (value.is_null()) continue;
      json calls;
      if (auto e = parse_tool_calls(value, kw, calls)) return e;
      if (!calls.empty()) out["tool_calls"] = std::move(calls);
    } else {
      return invalid_param(kw, fmt::format("'{}' is not supported", kw));
    }
  }
  auto content = m.find("content");
  if (content == m.end() || content->is_null()) {
    if (r != "assistant") {
      return invalid_param(where + ".content", fmt::format("'{}.content' is required", where));
    }
    // Templates test `content is string` or print it: an assistant turn that only calls tools
    // has empty text, as in vLLM and llama.cpp.
    out["content"] = "";
    return std::nullopt;
  }
  std::string text;
  if (auto e = message_text(*content, where + ".content", text)) return e;
  out["content"] = std::move(text);
  return std::nullopt;
}

std::optional<ApiError> parse_messages(const json& body, chat::Conversation& conv) {
  const json* msgs = json_field(body, "messages");
  if (!msgs) return invalid_param("messages", "'messages' is required");
  if (!msgs->is_array()) return wrong_type("messages", *msgs, "an array");
  if (msgs->empty()) return invalid_param("messages", "'messages' must not be empty");
  conv.messages = json::array();
  for (size_t i = 0; i < msgs->size(); ++i) {
    json m;
    if (auto e = parse_message((*msgs)[i], fmt::format("messages[{}]", i), m)) return e;
    conv.messages.push_back(std::move(m));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_tools(const json& body, json& tools) {
  const json* t = json_field(body, "tools");
  if (!t) return std::nullopt;
  if (!t->is_array()) return wrong_type("tools", *t, "an array");
  if (t->size() > kMaxTools) {
    return invalid_param("tools", fmt::format("'tools' has {} entries, at most {} are allowed",
                                              t->size(), kMaxTools));
  }
  for (size_t i = 0; i < t->size(); ++i) {
    const json& tool = (*t)[i];
    const std::string w = fmt::format("tools[{}]", i);
    if (!tool.is_object()) return wrong_type(w, tool, "an object");
    const json* type = json_field(tool, "type");
    if (!type || *type != "function") {
      return invalid_param(w + ".type", fmt::format("'{}.type' must be \"function\"", w));
    }
    const json* fn = json_field(tool, "function");
    if (!fn || !fn->is_object()) {
      return invalid_param(w + ".function", fmt::format("'{}.function' must be an object", w));
    }
    const json* name = json_field(*fn, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty()) {
      return invalid_param(w + ".function.name",
                           fmt::format("'{}.function.name' must be a non-empty string", w));
    }
    if (const json* p = json_field(*fn, "parameters"); p && !p->is_object()) {
      return wrong_type(w + ".function.parameters", *p, "an object (a JSON Schema)");
    }
    if (const json* d = json_field(*fn, "description"); d && !d->is_string()) {
      return wrong_type(w + ".function.description", *d, "a string");
    }
  }
  if (!t->empty()) tools = *t;
  return std::nullopt;
}

bool has_tool(const json& tools, const std::string& name) {
  if (!tools.is_array()) return false;
  for (const auto& t : tools) {
    if (t["function"]["name"] == name) return true;
  }
  return false;
}

std::optional<ApiError> parse_tool_choice(const json& body, ChatOptions& out) {
  const json* c = json_field(body, "tool_choice");
  const bool tools = out.has_tools();
  if (c && c->is_string()) {
    const std::string s = c->get<std::string>();
    if (s == "none") {
      out.tool_choice = ToolChoice::kNone;
    } else if (s == "auto") {
      out.tool_choice = ToolChoice::kAuto;
    } else if (s == "required") {
      out.tool_choice = ToolChoice::kRequired;
    } else {
      return invalid_param("tool_choice", fmt::format("'tool_choice' = '{}' is not one of none, "
                                                      "auto, required", s));
    }
  } else if (c) {
    const json* fn = c->is_object() ? json_field(*c, "function") : nullptr;
    const json* name = fn && fn->is_object() ? json_field(*fn, "name") : nullptr;
    if (!name || !name->is_string() || json_field(*c, "type") == nullptr ||
        *json_field(*c, "type") != "function") {
      return invalid_param("tool_choice", "'tool_choice' must be \"none\", \"auto\", "
                                          "\"required\" or {\"type\": \"function\", \"function\": "
                                          "{\"name\": ...}}");
    }
    out.tool_choice = ToolChoice::kFunction;
    out.tool_choice_name = name->get<std::string>();
    if (!has_tool(out.conversation.tools, out.tool_choice_name)) {
      return invalid_param("tool_choice", fmt::format("'tool_choice' names the function '{}', "
                                                      "which is not in 'tools'",
                                                      out.tool_choice_name));
    }
  }
  if (!tools && (out.tool_choice == ToolChoice::kRequired)) {
    return invalid_param("tool_choice", "'tool_choice' = 'required' needs 'tools'");
  }
  if (out.tool_choice == ToolChoice::kNone) out.conversation.tools = nullptr;
  if (const json* p = json_field(body, "parallel_tool_calls")) {
    if (!p->is_boolean()) return wrong_type("parallel_tool_calls", *p, "a boolean");
    out.parallel_tool_calls = p->get<bool>();
  }
  return std::nullopt;
}

std::optional<ApiError> parse_template_kwargs(const json& body, chat::Conversation& conv) {
  if (const json* k = json_field(body, "chat_template_kwargs")) {
    if (!k->is_object()) return wrong_type("chat_template_kwargs", *k, "an object");
    conv.kwargs = *k;
  }
  if (const json* r = json_field(body, "reasoning_effort")) {
    if (!r->is_string()) return wrong_type("reasoning_effort", *r, "a string");
    const std::string v = r->get<std::string>();
    if (v != "none" && v != "minimal" && v != "low" && v != "medium" && v != "high") {
      return invalid_param("reasoning_effort", fmt::format("'reasoning_effort' = '{}' is not one "
                                                           "of none, minimal, low, medium, high",
                                                           v));
    }
    if (!conv.kwargs.contains("reasoning_effort")) conv.kwargs["reasoning_effort"] = v;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_chat_options(const json& body, ChatOptions& out) {
  out = ChatOptions{};
  if (auto e = parse_messages(body, out.conversation)) return e;
  if (auto e = parse_tools(body, out.conversation.tools)) return e;
  if (auto e = parse_tool_choice(body, out)) return e;
  return parse_template_kwargs(body, out.conversation);
}

std::optional<ApiError> parse_output_constraint(const json& body, OutputConstraint& out) {
  out = OutputConstraint{};
  const json* rf = json_field(body, "response_format");
  const json* g = json_field(body, "grammar");
  const json* re = json_field(body, "regex");
  if (int(rf != nullptr) + int(g != nullptr) + int(re != nullptr) > 1) {
    return invalid_param(g ? "grammar" : "regex",
                         "at most one of 'response_format', 'grammar' and 'regex' may be given");
  }
  if (g || re) {
    const char* key = g ? "grammar" : "regex";
    const json& v = g ? *g : *re;
    if (!v.is_string() || v.get<std::string>().empty()) {
      return invalid_param(key, fmt::format("'{}' must be a non-empty string ({})", key,
                                            g ? "GBNF" : "a regular expression"));
    }
    out.kind = g ? OutputConstraint::Kind::kGrammar : OutputConstraint::Kind::kRegex;
    out.grammar = v.get<std::string>();
    return std::nullopt;
  }
  if (!rf) return std::nullopt;
  if (!rf->is_object()) return wrong_type("response_format", *rf, "an object");
  const json* type = json_field(*rf, "type");
  if (!type || !type->is_string()) {
    return invalid_param("response_format.type", "'response_format.type' must be a string");
  }
  const std::string t = type->get<std::string>();
  if (t == "text") return std::nullopt;
  if (t == "json_object") {
    out.kind = OutputConstraint::Kind::kJsonObject;
    if (const json* s = json_field(*rf, "schema")) {  // llama.cpp's shorthand
      if (!s->is_object()) return wrong_type("response_format.schema", *s, "an object");
      out.kind = OutputConstraint::Kind::kJsonSchema;
      out.schema = *s;
    }
    return std::nullopt;
  }
  if (t == "json_schema") {
    const json* js = json_field(*rf, "json_schema");
    if (!js || !js->is_object()) {
      return invalid_param("response_format.json_schema",
                           "'response_format.json_schema' must be an object");
    }
    const json* s = json_field(*js, "schema");
    if (s && !s->is_object() && !s->is_boolean()) {
      return wrong_type("response_format.json_schema.schema", *s, "an object");
    }
    out.kind = OutputConstraint::Kind::kJsonSchema;
    out.schema = s ? *s : json::object();
    return std::nullopt;
  }
  return invalid_param("response_format.type",
                       fmt::format("'response_format.type' = '{}' is not one of text, "
                                   "json_object, json_schema", t));
}

}  // namespace ridge::server
