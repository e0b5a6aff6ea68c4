// Gemma 4's argument notation as grammar, from a tool's parameters schema: what the template's
// format_argument writes and the Gemma 4 call parser (tool_calls_gemma4.cpp) reads back:
//   {key:value,...}  keys bare and in sorted order (the template's dictsort), nested too;
//   <|"|>text<|"|>   strings between <|"|> tokens; [a,b] lists; bare numbers, true / false, None.
// Supported: type (one or a list), nullable, properties / required (each property at most
// once, required ones always), objects without properties (any bare keys), items,
// minItems / maxItems, enum / const, anyOf / oneOf; annotations (and `format`) are ignored.
// Anything else (pattern, lengths, bounds, $ref, allOf, prefixItems, ...) is refused: a forced
// call must satisfy the schema, and these would need more than this notation grammar.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "chat/constraint_grammar.h"
#include "grammar/grammar.h"

namespace ridge::chat::detail {
namespace {

using grammar::gbnf_literal;
using nlohmann::ordered_json;

constexpr int kMaxDepth = 64;
constexpr int64_t kMaxItems = 1000;
constexpr const char* kQuote = "<|\"|>";

bool is_annotation(std::string_view k) {
  for (std::string_view a :
       {"title", "description", "default", "examples", "$schema", "$id", "$comment", "$defs",
        "definitions", "deprecated", "readOnly", "writeOnly", "format", "$anchor",
        "contentEncoding", "contentMediaType"}) {
    if (k == a) return true;
  }
  return false;
}

// A value as the template writes it.
std::string notation_literal(const ordered_json& v) {
  if (v.is_string())
    return fmt::format("{} {} {}", kQuote, gbnf_literal(v.get<std::string>()), kQuote);
  if (v.is_boolean()) return v.get<bool>() ? "\"true\"" : "\"false\"";
  if (v.is_null()) return "\"None\"";
  if (v.is_number()) return gbnf_literal(v.dump());
  std::string out;
  if (v.is_array()) {
    out = "\"[\"";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? " \",\" " : " ") + notation_literal(v[i]);
    return out + " \"]\"";
  }
  std::vector<std::string> keys;
  for (const auto& [k, x] : v.items()) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  out = "\"{\"";
  for (size_t i = 0; i < keys.size(); ++i) {
    out += (i ? " \",\" " : " ") + gbnf_literal(keys[i] + ":") + " " + notation_literal(v[keys[i]]);
  }
  return out + " \"}\"";
}

class Converter {
 public:
  explicit Converter(std::string prefix) : prefix_(std::move(prefix)) {}

  Result<std::string> run(const ordered_json& schema) {
    RIDGE_ASSIGN_OR_RETURN(std::string top, visit(schema, "", 0));
    return fmt::format("{}root ::= {}\n{}", prefix_, top, rules_);
  }

 private:
  Status err(const std::string& ptr, std::string_view what) const {
    return Status::usage(fmt::format("gemma4 arguments: {}: {}", ptr.empty() ? "/" : ptr, what));
  }
  std::string add_rule(const std::string& body) {
    std::string name = fmt::format("{}s{}", prefix_, n_rules_++);
    rules_ += fmt::format("{} ::= {}\n", name, body);
    return name;
  }

  Result<std::string> visit(const ordered_json& s, const std::string& ptr, int depth) {
    if (depth > kMaxDepth) return err(ptr, "schema nested too deeply");
    if (s.is_boolean()) {
      if (s.get<bool>()) return std::string("ridge-g4-any");
      return err(ptr, "the schema 'false' matches nothing");
    }
    if (!s.is_object()) return err(ptr, "a schema must be an object or a boolean");
    for (const auto& [k, v] : s.items()) {
      if (is_annotation(k)) continue;
      static const std::vector<std::string_view> kKnown = {
          "type",  "nullable", "properties", "required", "additionalProperties",
          "items", "minItems", "maxItems",   "enum",     "const",
          "anyOf", "oneOf"};
      if (std::find(kKnown.begin(), kKnown.end(), k) == kKnown.end()) {
        return err(ptr, fmt::format("keyword '{}' is not supported in Gemma 4's notation", k));
      }
    }
    std::vector<std::string> alts;
    if (s.contains("anyOf") || s.contains("oneOf")) {
      const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
      const ordered_json& list = s[key];
      if (!list.is_array() || list.empty())
        return err(ptr, fmt::format("'{}' must be a non-empty array", key));
      for (size_t i = 0; i < list.size(); ++i) {
        RIDGE_ASSIGN_OR_RETURN(std::string a,
                               visit(list[i], fmt::format("{}/{}/{}", ptr, key, i), depth + 1));
        alts.push_back(std::move(a));
      }
    } else if (s.contains("enum") || s.contains("const")) {
      const ordered_json values =
          s.contains("const") ? ordered_json::array({s["const"]}) : s["enum"];
      if (!values.is_array() || values.empty()) return err(ptr, "'enum' must be a non-empty array");
      for (const auto& v : values) alts.push_back(notation_literal(v));
    } else {
      std::vector<std::string> types;
      if (s.contains("type")) {
        const ordered_json& t = s["type"];
        for (const auto& x : t.is_array() ? t : ordered_json::array({t})) {
          if (!x.is_string())
            return err(ptr + "/type", "'type' must be a string or a list of them");
          types.push_back(x.get<std::string>());
        }
      } else if (s.contains("properties")) {
        types = {"object"};
      } else if (s.contains("items")) {
        types = {"array"};
      } else {
        types = {"any"};
      }
      for (const std::string& t : types) {
        RIDGE_ASSIGN_OR_RETURN(std::string a, typed(s, t, ptr, depth));
        alts.push_back(std::move(a));
      }
    }
    if (s.contains("nullable") && s["nullable"].is_boolean() && s["nullable"].get<bool>()) {
      alts.push_back("\"None\"");
    }
    if (alts.size() == 1) return alts[0];
    std::string body;
    for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
    return add_rule(body);
  }

  Result<std::string> typed(const ordered_json& s, const std::string& t, const std::string& ptr,
                            int depth) {
    if (t == "any") return std::string("ridge-g4-any");
    if (t == "string") return fmt::format("{} ridge-g4-str {}", kQuote, kQuote);
    if (t == "integer") return std::string("ridge-g4-int");
    if (t == "number") return std::string("ridge-g4-num");
    if (t == "boolean") return std::string("(\"true\" | \"false\")");
    if (t == "null") return std::string("\"None\"");
    if (t == "array") return array(s, ptr, depth);
    if (t == "object") return object(s, ptr, depth);
    return err(ptr + "/type", fmt::format("unknown type '{}'", t));
  }

  Result<std::string> array(const ordered_json& s, const std::string& ptr, int depth) {
    std::string item = "ridge-g4-any";
    if (s.contains("items")) {
      if (s["items"].is_boolean() && !s["items"].get<bool>()) return std::string("\"[]\"");
      RIDGE_ASSIGN_OR_RETURN(item, visit(s["items"], ptr + "/items", depth + 1));
    }
    int64_t lo = 0, hi = -1;
    for (const char* k : {"minItems", "maxItems"}) {
      if (!s.contains(k)) continue;
      if (!s[k].is_number_integer() || s[k].get<int64_t>() < 0 || s[k].get<int64_t>() > kMaxItems) {
        return err(fmt::format("{}/{}", ptr, k),
                   fmt::format("must be an integer in 0..{}", kMaxItems));
      }
      (k[1] == 'i' ? lo : hi) = s[k].get<int64_t>();
    }
    if (hi >= 0 && hi < lo) return err(ptr, "'minItems' is larger than 'maxItems'");
    if (hi == 0) return std::string("\"[]\"");
    const std::string more = hi < 0
                                 ? fmt::format("{{{},}}", std::max<int64_t>(lo - 1, 0))
                                 : fmt::format("{{{},{}}}", std::max<int64_t>(lo - 1, 0), hi - 1);
    const std::string list = fmt::format("{} (\",\" {}){}", item, item, more);
    return add_rule(lo == 0 ? fmt::format("\"[\" ({})? \"]\"", list)
                            : fmt::format("\"[\" {} \"]\"", list));
  }

  Result<std::string> object(const ordered_json& s, const std::string& ptr, int depth) {
    const ordered_json props = s.value("properties", ordered_json::object());
    const ordered_json required = s.value("required", ordered_json::array());
    if (!props.is_object()) return err(ptr + "/properties", "'properties' must be an object");
    if (!required.is_array()) return err(ptr + "/required", "'required' must be an array");
    struct Prop {
      std::string key, value;
      bool required;
    };
    std::vector<Prop> list;
    for (const auto& [k, v] : props.items()) {
      RIDGE_ASSIGN_OR_RETURN(std::string value, visit(v, ptr + "/properties/" + k, depth + 1));
      const bool req = std::find(required.begin(), required.end(), k) != required.end();
      list.push_back({k, std::move(value), req});
    }
    for (const auto& r : required) {
      if (!r.is_string()) return err(ptr + "/required", "names must be strings");
      if (!props.contains(r.get<std::string>()))
        list.push_back({r.get<std::string>(), "ridge-g4-any", true});
    }
    for (const Prop& p : list) {
      if (p.key.empty() || p.key.find_first_of(":,{}[]<>\"' \t\r\n") != std::string::npos) {
        return err(
            ptr,
            fmt::format("property name '{}' cannot be written bare in Gemma 4's notation", p.key));
      }
    }
    if (list.empty()) {
      const ordered_json& extra =
          s.contains("additionalProperties") ? s["additionalProperties"] : ordered_json(true);
      if (extra.is_boolean() && !extra.get<bool>()) return std::string("\"{}\"");
      std::string v = "ridge-g4-any";
      if (!extra.is_boolean()) {
        RIDGE_ASSIGN_OR_RETURN(v, visit(extra, ptr + "/additionalProperties", depth + 1));
      }
      return add_rule(fmt::format(
          "\"{{\" (ridge-g4-key \":\" {} (\",\" ridge-g4-key \":\" {})*)? \"}}\"", v, v));
    }
    std::sort(list.begin(), list.end(), [](const Prop& a, const Prop& b) { return a.key < b.key; });
    // rest[i][first]: the properties from i on; `first`: none written yet (no comma before).
    std::vector<std::array<std::string, 2>> rest(list.size() + 1);
    rest[list.size()] = {"", ""};
    for (size_t i = list.size(); i-- > 0;) {
      for (int first = 0; first < 2; ++first) {
        const std::string kv =
            fmt::format("{}{} {} {}", first ? "" : "\",\" ", gbnf_literal(list[i].key + ":"),
                        list[i].value, rest[i + 1][0]);
        const std::string& skip = rest[i + 1][first];
        rest[i][first] = list[i].required
                             ? add_rule(kv)
                             : add_rule(fmt::format("{} | {}", kv, skip.empty() ? "\"\"" : skip));
      }
    }
    return add_rule(fmt::format("\"{{\" {} \"}}\"", rest[0][1]));
  }

  std::string prefix_;
  std::string rules_;
  int n_rules_ = 0;
};

}  // namespace

std::string gemma4_value_rules() {
  return "ridge-g4-str ::= ([^<] | \"<\"+ [^<|])* \"<\"*\n"
         "ridge-g4-int ::= \"-\"? (\"0\" | [1-9] [0-9]{0,17})\n"
         "ridge-g4-num ::= ridge-g4-int (\".\" [0-9]{1,17})? ([eE] [-+]? [0-9]{1,2})?\n"
         "ridge-g4-key ::= [A-Za-z_] [A-Za-z0-9_]{0,63}\n"
         "ridge-g4-any ::= <|\"|> ridge-g4-str <|\"|> | ridge-g4-num | \"true\" | \"false\" | "
         "\"None\" "
         "| \"[\" (ridge-g4-any (\",\" ridge-g4-any)*)? \"]\" "
         "| \"{\" (ridge-g4-key \":\" ridge-g4-any (\",\" ridge-g4-key \":\" ridge-g4-any)*)? "
         "\"}\"\n";
}

Result<std::string> gemma4_arguments_gbnf(const nlohmann::ordered_json& params,
                                          const std::string& prefix) {
  return Converter(prefix).run(params);
}

}  // namespace ridge::chat::detail
