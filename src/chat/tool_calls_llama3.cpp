// Llama 3.1 / 3.2 / 3.3 tool calls. The custom-tool form is a JSON object that is the whole
// message: {"name": NAME, "parameters": {...}} (arguments in "parameters"; "arguments" also
// accepted), recognised only at the start of the content and only for a tool of the request
// when the request lists them, so a JSON answer stays content. Llama 3.1's built-in tools follow
// <|python_tag|>: NAME.call(key="value", ...), or a JSON call, or else Python code, which becomes
// a call of "python" with {"code": ...} (as llama.cpp does).
#include <algorithm>
#include <cctype>

#include "chat/output_internal.h"

namespace ridge::chat {
namespace {

bool known_tool(const nlohmann::json& tools, const std::string& name) {
  if (!tools.is_array() || tools.empty()) return true;  // nothing to check against
  for (const auto& t : tools) {
    if (!t.is_object()) continue;
    const auto f = t.find("function");
    const nlohmann::json& def = (f != t.end() && f->is_object()) ? *f : t;
    const auto n = def.find("name");
    if (n != def.end() && n->is_string() && n->get_ref<const std::string&>() == name) return true;
  }
  return false;
}

class JsonBlock final : public ToolBlock {
 public:
  explicit JsonBlock(const ParserOptions& o) : tools_(o.tools) {}

  size_t find_end(std::string_view block) override {
    while (pos_ < block.size()) {
      if (json_.feed(block[pos_++])) return pos_;
    }
    return std::string_view::npos;
  }

  bool parse(std::string_view block, bool complete, std::vector<RawCall>& out) override {
    if (!complete) return false;
    const nlohmann::json j = parse_json(block);
    if (!j.is_object() || (!j.contains("parameters") && !j.contains("arguments"))) return false;
    if (j.contains("type") && j["type"] != "function") return false;
    RawCall call;
    if (!parse_json_call(block, call) || !known_tool(tools_, call.name)) return false;
    out.push_back(std::move(call));
    return true;
  }

 private:
  const nlohmann::json& tools_;
  size_t pos_ = 0;
  JsonExtent json_;
};

// NAME.call(key="value", key2=3): the arguments as a JSON object, or false.
bool parse_builtin_call(std::string_view body, RawCall& out) {
  const size_t dot = body.find(".call(");
  if (dot == std::string_view::npos || !body.ends_with(")")) return false;
  const std::string_view name = trim(body.substr(0, dot));
  if (name.empty()) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  std::string_view rest = body.substr(dot + 6, body.size() - dot - 7);
  nlohmann::json args = nlohmann::json::object();
  while (!(rest = ltrim(rest)).empty()) {
    const size_t eq = rest.find('=');
    if (eq == std::string_view::npos) return false;
    const std::string key(trim(rest.substr(0, eq)));
    rest = ltrim(rest.substr(eq + 1));
    if (key.empty() || rest.empty()) return false;
    if (rest[0] == '"' || rest[0] == '\'') {  // a string literal, backslash escapes kept simple
      const char q = rest[0];
      std::string v;
      size_t i = 1;
      for (; i < rest.size() && rest[i] != q; ++i) {
        if (rest[i] == '\\' && i + 1 < rest.size()) ++i;
        v += rest[i];
      }
      if (i >= rest.size()) return false;
      args[key] = v;
      rest = rest.substr(i + 1);
    } else {
      const size_t comma = rest.find(',');
      const std::string_view tok = trim(rest.substr(0, comma));
      const nlohmann::json v = parse_json(tok);
      args[key] = v.is_discarded() ? nlohmann::json(std::string(tok)) : v;
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma);
    }
    rest = ltrim(rest);
    if (!rest.empty()) {
      if (rest[0] != ',') return false;
      rest.remove_prefix(1);
    }
  }
  out.name = std::string(name);
  out.arguments = dump_json(args);
  return true;
}

class PythonTagBlock final : public ToolBlock {
 public:
  size_t find_end(std::string_view block) override {
    static constexpr std::string_view kEnds[] = {"<|eom_id|>", "<|eot_id|>"};
    const MarkerHit hit = find_marker(block.substr(pos_), kEnds);
    if (hit.found()) return pos_ + hit.pos;  // the end marker stays for the content to drop
    pos_ = std::max(pos_, block.size() - std::min<size_t>(block.size(), 9));
    return std::string_view::npos;
  }

  bool parse(std::string_view block, bool /*complete*/, std::vector<RawCall>& out) override {
    const std::string_view body = trim(block.substr(kTag.size()));
    if (body.empty()) return false;
    RawCall call;
    if (body.starts_with("{")) {
      if (!parse_json_call(body, call)) return false;
    } else if (!parse_builtin_call(body, call)) {
      call.name = "python";
      call.arguments = dump_json(nlohmann::json{{"code", std::string(body)}});
    }
    out.push_back(std::move(call));
    return true;
  }

 private:
  static constexpr std::string_view kTag = "<|python_tag|>";
  size_t pos_ = kTag.size();
};

}  // namespace

std::unique_ptr<ToolBlock> make_llama3_block(size_t marker_index, const ParserOptions& o) {
  if (marker_index == std::string_view::npos) return std::make_unique<JsonBlock>(o);
  return std::make_unique<PythonTagBlock>();
}

}  // namespace ridge::chat
