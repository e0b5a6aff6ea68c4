// JSON Schema -> GBNF: one rule per schema node, shared primitive rules (json_schema_prims.cpp),
// patterns through json_schema_regex.cpp. The generated text is parsed once before it is
// returned, so what this returns always compiles.
#include "grammar/json_schema.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/json_schema_converter.h"
#include "grammar/json_schema_internal.h"

namespace ridge::grammar::detail {

bool is_annotation(std::string_view k) {
  static const std::set<std::string_view> kAnnotations = {
      "title",       "description",     "$schema",         "$id",       "$comment", "default",
      "examples",    "deprecated",      "readOnly",        "writeOnly", "$anchor",  "$defs",
      "definitions", "contentEncoding", "contentMediaType"};
  return kAnnotations.count(k) != 0;
}

namespace {

bool is_supported(std::string_view k) {
  static const std::set<std::string_view> kSupported = {"type",
                                                        "enum",
                                                        "const",
                                                        "anyOf",
                                                        "oneOf",
                                                        "allOf",
                                                        "$ref",
                                                        "properties",
                                                        "required",
                                                        "additionalProperties",
                                                        "items",
                                                        "prefixItems",
                                                        "minItems",
                                                        "maxItems",
                                                        "uniqueItems",
                                                        "minLength",
                                                        "maxLength",
                                                        "pattern",
                                                        "format",
                                                        "minimum",
                                                        "maximum",
                                                        "exclusiveMinimum",
                                                        "exclusiveMaximum"};
  return kSupported.count(k) != 0;
}

}  // namespace

std::string pointer_escape(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

template <class J>
std::string Converter<J>::prim(const std::string& name) {
  if (defined_.count(name)) return name;
  defined_.insert(name);
  std::vector<std::string> deps;
  rules_.emplace_back(name, primitive_body(name, &deps));
  for (const std::string& d : deps) prim(d);
  return name;
}

template <class J>
Status Converter<J>::err(const std::string& ptr, std::string_view what) const {
  return Status::usage(fmt::format("json_schema: {}: {}", ptr.empty() ? "/" : ptr, what));
}

template <class J>
std::string Converter<J>::add_rule(std::string body) {
  std::string name = fmt::format("s{}", rules_.size());
  rules_.emplace_back(name, std::move(body));
  return name;
}

template <class J>
std::string Converter<J>::alternation(const std::vector<std::string>& alts) {
  std::string body;
  for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
  return add_rule(std::move(body));
}

template <class J>
std::string Converter<J>::other_keyword(const json& s,
                                        std::initializer_list<std::string_view> allowed) {
  for (const auto& [k, v] : s.items()) {
    if (is_annotation(k)) continue;
    bool ok = false;
    for (std::string_view a : allowed) ok = ok || a == k;
    if (!ok) return k;
  }
  return "";
}

template <class J>
Result<std::string> Converter<J>::run() {
  RIDGE_ASSIGN_OR_RETURN(std::string top, visit(root_, "", 0));
  return text(top);
}

template <class J>
std::string Converter<J>::text(const std::string& top) const {
  std::string out = "root ::= " + top + "\n";
  for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
  return out;
}

template <class J>
Result<std::string> Converter<J>::visit(const json& s, const std::string& ptr, int depth) {
  if (depth > kMaxDepth) return err(ptr, fmt::format("schema nested deeper than {}", kMaxDepth));
  if (s.is_boolean()) {
    if (s.template get<bool>()) return prim("j-value");
    return err(ptr, "the schema 'false' matches nothing");
  }
  if (!s.is_object()) return err(ptr, "a schema must be an object or a boolean");
  for (const auto& [k, v] : s.items()) {
    if (!is_supported(k) && !is_annotation(k)) {
      return err(ptr, fmt::format("unsupported keyword '{}'", k));
    }
  }
  if (s.contains("$ref")) {
    if (auto k = other_keyword(s, {"$ref"}); !k.empty()) {
      return err(ptr, fmt::format("'$ref' beside '{}' is not supported", k));
    }
    return visit_ref(s["$ref"], ptr + "/$ref", depth);
  }
  if (s.contains("allOf")) return visit_all_of(s, ptr, depth);
  for (const char* kw : {"anyOf", "oneOf"}) {
    if (!s.contains(kw)) continue;
    if (auto k = other_keyword(s, {kw}); !k.empty()) {
      return err(ptr, fmt::format("'{}' beside '{}' is not supported", kw, k));
    }
    const json& list = s[kw];
    if (!list.is_array() || list.empty())
      return err(ptr, fmt::format("'{}' must be a non-empty array", kw));
    std::vector<std::string> alts;
    for (size_t i = 0; i < list.size(); ++i) {
      RIDGE_ASSIGN_OR_RETURN(std::string a,
                             visit(list[i], fmt::format("{}/{}/{}", ptr, kw, i), depth + 1));
      alts.push_back(std::move(a));
    }
    return alternation(alts);
  }
  if (s.contains("const") || s.contains("enum")) return visit_literals(s, ptr);
  std::vector<std::string> types;
  if (s.contains("type")) {
    const json& t = s["type"];
    if (t.is_string()) {
      types.push_back(t.template get<std::string>());
    } else if (t.is_array() && !t.empty()) {
      for (const json& x : t) {
        if (!x.is_string())
          return err(ptr + "/type", "'type' must be a string or array of strings");
        types.push_back(x.template get<std::string>());
      }
    } else {
      return err(ptr + "/type", "'type' must be a string or a non-empty array of strings");
    }
  } else {
    // No type: generate the type the keywords are about (a subset of what the schema allows).
    auto has = [&](std::initializer_list<const char*> ks) {
      for (const char* k : ks)
        if (s.contains(k)) return true;
      return false;
    };
    if (has({"properties", "required", "additionalProperties"}))
      types = {"object"};
    else if (has({"items", "prefixItems", "minItems", "maxItems", "uniqueItems"}))
      types = {"array"};
    else if (has({"minLength", "maxLength", "pattern", "format"}))
      types = {"string"};
    else if (has({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}))
      types = {"integer"};
    else
      return prim("j-value");
  }
  std::vector<std::string> alts;
  for (const std::string& t : types) {
    RIDGE_ASSIGN_OR_RETURN(std::string a, visit_typed(s, t, ptr, depth));
    alts.push_back(std::move(a));
  }
  return alts.size() == 1 ? alts[0] : alternation(alts);
}

template <class J>
Result<std::string> Converter<J>::visit_ref(const json& ref, const std::string& ptr, int depth) {
  if (!ref.is_string()) return err(ptr, "'$ref' must be a string");
  const std::string r = ref.template get<std::string>();
  if (auto it = refs_.find(r); it != refs_.end()) return it->second;
  if (r.empty() || r[0] != '#') {
    return err(ptr,
               fmt::format("only local references ('#/$defs/...') are supported, not '{}'", r));
  }
  const json* target = nullptr;
  try {
    target = &root_.at(typename json::json_pointer(r.substr(1)));
  } catch (const std::exception&) {
    return err(ptr, fmt::format("cannot resolve '$ref' '{}'", r));
  }
  const std::string name = add_rule("");
  refs_.emplace(r, name);
  RIDGE_ASSIGN_OR_RETURN(std::string body, visit(*target, r.substr(1), depth + 1));
  for (auto& [n, b] : rules_) {
    if (n == name) b = body;
  }
  return name;
}

template <class J>
Result<std::string> Converter<J>::visit_all_of(const json& s, const std::string& ptr, int depth) {
  const json& list = s["allOf"];
  if (!list.is_array() || list.empty()) return err(ptr, "'allOf' must be a non-empty array");
  std::vector<std::pair<json, std::string>> parts;
  json own = json::object();
  for (const auto& [k, v] : s.items()) {
    if (k != "allOf" && !is_annotation(k)) own[k] = v;
  }
  if (!own.empty()) parts.emplace_back(own, ptr);
  for (size_t i = 0; i < list.size(); ++i) {
    json part = list[i];
    std::string where = fmt::format("{}/allOf/{}", ptr, i);
    for (int hops = 0; part.is_object() && part.contains("$ref") && part.size() == 1; ++hops) {
      if (hops > 16 || !part["$ref"].is_string()) return err(where, "'$ref' chain too long");
      const std::string r = part["$ref"].template get<std::string>();
      try {
        part = root_.at(typename json::json_pointer(r.substr(1)));
      } catch (const std::exception&) {
        return err(where, fmt::format("cannot resolve '$ref' '{}'", r));
      }
      where = r.substr(1);
    }
    parts.emplace_back(std::move(part), where);
  }
  if (parts.size() == 1) return visit(parts[0].first, parts[0].second, depth + 1);
  json merged = {{"type", "object"}, {"properties", json::object()}, {"required", json::array()}};
  int with_props = 0, with_extra = 0;
  for (const auto& [p, where] : parts) {
    if (!p.is_object()) return err(where, "'allOf' parts must be object schemas");
    if (auto k = other_keyword(p, {"type", "properties", "required", "additionalProperties"});
        !k.empty()) {
      return err(where, fmt::format("'allOf' is supported only for object schemas "
                                    "(type/properties/required/additionalProperties), not '{}'",
                                    k));
    }
    if (p.contains("type") && p["type"] != "object") {
      return err(where, "'allOf' is supported only for schemas of type 'object'");
    }
    if (p.contains("properties")) {
      ++with_props;
      if (!p["properties"].is_object()) return err(where, "'properties' must be an object");
      for (const auto& [k, v] : p["properties"].items()) {
        if (merged["properties"].contains(k) && merged["properties"][k] != v) {
          return err(where,
                     fmt::format("property '{}' is defined differently in two 'allOf' parts", k));
        }
        merged["properties"][k] = v;
      }
    }
    if (p.contains("required")) {
      if (!p["required"].is_array()) return err(where, "'required' must be an array");
      for (const json& r : p["required"]) merged["required"].push_back(r);
    }
    if (p.contains("additionalProperties")) {
      ++with_extra;
      merged["additionalProperties"] = p["additionalProperties"];
    }
  }
  if (with_extra > 0 && with_props + with_extra > 2) {
    return err(ptr, "'additionalProperties' inside 'allOf' with several parts is not supported");
  }
  return visit(merged, ptr, depth + 1);
}

template <class J>
Result<std::string> Converter<J>::visit_literals(const json& s, const std::string& ptr) {
  if (auto k = other_keyword(s, {"const", "enum", "type"}); !k.empty()) {
    return err(ptr, fmt::format("'enum'/'const' beside '{}' is not supported", k));
  }
  json values = json::array();
  if (s.contains("enum") && (!s["enum"].is_array() || s["enum"].empty())) {
    return err(ptr, "'enum' must be a non-empty array");
  }
  if (s.contains("const")) {
    bool in_enum = !s.contains("enum");
    for (const json& v : s.contains("enum") ? s["enum"] : json::array())
      in_enum = in_enum || v == s["const"];
    if (in_enum) values.push_back(s["const"]);
  } else {
    values = s["enum"];
  }
  std::vector<std::string> alts;
  std::set<std::string> seen;
  for (const json& v : values) {
    if (s.contains("type")) {
      const json& t = s["type"];
      bool match = false;
      for (const json& x : t.is_array() ? t : json::array({t})) {
        const std::string n = x.is_string() ? x.template get<std::string>() : "";
        match = match || (n == "null" && v.is_null()) || (n == "boolean" && v.is_boolean()) ||
                (n == "integer" && v.is_number_integer()) || (n == "number" && v.is_number()) ||
                (n == "string" && v.is_string()) || (n == "array" && v.is_array()) ||
                (n == "object" && v.is_object());
      }
      if (!match) continue;
    }
    std::string lit = gbnf_literal(v.dump());
    if (seen.insert(lit).second) alts.push_back(std::move(lit));
  }
  if (alts.empty()) return err(ptr, "no 'enum'/'const' value satisfies the schema");
  return alternation(alts);
}

// Both document models (json_schema_types.cpp has the other members).
template class Converter<nlohmann::json>;
template class Converter<nlohmann::ordered_json>;

}  // namespace ridge::grammar::detail
