// JSON Schema -> GBNF, one method per JSON type, and the public entry points.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/json_schema_converter.h"
#include "grammar/json_schema_internal.h"

namespace ridge::grammar::detail {

namespace {
const char* const kQuote = R"("\"")";
}  // namespace

template <class J>
Result<std::string> Converter<J>::visit_typed(const json& s, const std::string& type,
                                              const std::string& ptr, int depth) {
  if (type == "null") return prim("j-null");
  if (type == "boolean") return prim("j-boolean");
  if (type == "integer") return visit_integer(s, ptr);
  if (type == "number") {
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (s.contains(k)) {
        return err(ptr, fmt::format("unsupported keyword '{}' on type 'number' (bounds are "
                                    "supported on integers only)",
                                    k));
      }
    }
    return prim("j-number");
  }
  if (type == "string") return visit_string(s, ptr);
  if (type == "object") return visit_object(s, ptr, depth);
  if (type == "array") return visit_array(s, ptr, depth);
  return err(ptr + "/type", fmt::format("unknown type '{}'", type));
}

template <class J>
Result<int64_t> Converter<J>::count(const json& s, const char* key, const std::string& ptr,
                                    int64_t fallback, int64_t max) {
  if (!s.contains(key)) return fallback;
  const json& v = s[key];
  if (!v.is_number_integer() || v.template get<int64_t>() < 0) {
    return err(ptr, fmt::format("'{}' must be a non-negative integer", key));
  }
  if (v.template get<int64_t>() > max) {
    return err(ptr, fmt::format("'{}' over {} is not supported", key, max));
  }
  return v.template get<int64_t>();
}

template <class J>
Result<std::string> Converter<J>::visit_integer(const json& s, const std::string& ptr) {
  const bool bounded = s.contains("minimum") || s.contains("maximum") ||
                       s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum");
  if (!bounded) return prim("j-integer");
  const auto lim = static_cast<double>(kMaxIntegerMagnitude);
  double lo = -lim, hi = lim;
  for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    if (!s.contains(k)) continue;
    if (!s[k].is_number()) return err(ptr, fmt::format("'{}' must be a number", k));
    const double v = s[k].template get<double>();
    const std::string_view key = k;
    if (key == "minimum") lo = std::max(lo, std::ceil(v));
    if (key == "exclusiveMinimum") lo = std::max(lo, std::floor(v) + 1);
    if (key == "maximum") hi = std::min(hi, std::floor(v));
    if (key == "exclusiveMaximum") hi = std::min(hi, std::ceil(v) - 1);
  }
  lo = std::max(lo, -lim);
  hi = std::min(hi, lim);
  if (lo > hi) return err(ptr, "no integer lies within 'minimum'/'maximum'");
  return add_rule(integer_range_expr(static_cast<int64_t>(lo), static_cast<int64_t>(hi)));
}

template <class J>
Result<std::string> Converter<J>::visit_string(const json& s, const std::string& ptr) {
  const bool has_len = s.contains("minLength") || s.contains("maxLength");
  if (s.contains("format")) {
    if (!s["format"].is_string()) return err(ptr, "'format' must be a string");
    const std::string f = s["format"].template get<std::string>();
    if (f == "date" || f == "time" || f == "date-time" || f == "uuid") {
      if (has_len || s.contains("pattern")) {
        return err(ptr, "'format' beside 'pattern'/'minLength'/'maxLength' is not supported");
      }
      return add_rule(fmt::format("{} {} {}", kQuote, prim("j-" + f), kQuote));
    }
    // Other formats are annotations (as JSON Schema 2020-12 defines them by default): ignored.
  }
  if (s.contains("pattern")) {
    if (has_len) return err(ptr, "'pattern' beside 'minLength'/'maxLength' is not supported");
    if (!s["pattern"].is_string()) return err(ptr + "/pattern", "'pattern' must be a string");
    auto expr = regex_to_gbnf(s["pattern"].template get<std::string>());
    if (!expr.ok()) return err(ptr + "/pattern", expr.status().message());
    prim("j-char");
    return add_rule(fmt::format("{} ( {} ) {}", kQuote, *expr, kQuote));
  }
  if (!has_len) return prim("j-string");
  RIDGE_ASSIGN_OR_RETURN(int64_t lo, count(s, "minLength", ptr, 0, kMaxLength));
  RIDGE_ASSIGN_OR_RETURN(int64_t hi, count(s, "maxLength", ptr, -1, kMaxLength));
  if (hi >= 0 && hi < lo) return err(ptr, "'minLength' is larger than 'maxLength'");
  const std::string rep = hi < 0 ? fmt::format("{{{},}}", lo) : fmt::format("{{{},{}}}", lo, hi);
  return add_rule(fmt::format("{} {}{} {}", kQuote, prim("j-char"), rep, kQuote));
}

template <class J>
Result<std::string> Converter<J>::visit_object(const json& s, const std::string& ptr, int depth) {
  for (const char* k : {"properties", "required"}) {
    if (s.contains(k) && !(k[0] == 'p' ? s[k].is_object() : s[k].is_array())) {
      return err(ptr, fmt::format("'{}' has the wrong type", k));
    }
  }
  const json props = s.value("properties", json::object());
  std::set<std::string> required;
  for (const json& r : s.value("required", json::array())) {
    if (!r.is_string()) return err(ptr + "/required", "'required' must list strings");
    required.insert(r.template get<std::string>());
  }
  const bool has_extra = s.contains("additionalProperties");
  const json extra = s.value("additionalProperties", json(true));
  if (!extra.is_boolean() && !extra.is_object()) {
    return err(ptr + "/additionalProperties", "'additionalProperties' must be a schema");
  }
  // Undeclared properties are generated only when the schema asks for them explicitly, or when
  // it declares no properties at all (a subset of what JSON Schema allows; docs/grammar.md).
  const bool allow_extra = has_extra ? extra != json(false) : props.empty();
  struct Decl {
    std::string key, value;
    bool required;
  };
  std::vector<Decl> decls;
  std::vector<std::string> names;
  for (const auto& [k, v] : props.items()) {
    const std::string sub = ptr + "/properties/" + pointer_escape(k);
    names.push_back(k);
    if (v == json(false)) {
      if (required.count(k)) return err(sub, "a required property has the schema 'false'");
      continue;
    }
    RIDGE_ASSIGN_OR_RETURN(std::string value, visit(v, sub, depth + 1));
    decls.push_back({k, std::move(value), required.count(k) != 0});
  }
  for (const std::string& r : required) {
    if (props.contains(r)) continue;
    if (!allow_extra) {
      return err(ptr + "/required", fmt::format("required property '{}' is not declared in "
                                                "'properties' and no others are allowed",
                                                r));
    }
    std::string value = prim("j-value");
    if (extra.is_object()) {
      RIDGE_ASSIGN_OR_RETURN(value, visit(extra, ptr + "/additionalProperties", depth + 1));
    }
    names.push_back(r);
    decls.push_back({r, std::move(value), true});
  }
  const std::string ws = prim("j-ws");
  std::string extra_kv, extra_more;
  if (allow_extra) {
    std::string value = prim("j-value");
    if (extra.is_object()) {
      RIDGE_ASSIGN_OR_RETURN(value, visit(extra, ptr + "/additionalProperties", depth + 1));
    }
    std::string key = prim("j-string");
    if (!names.empty()) {
      for (const std::string& n : names) {
        if (n.size() > static_cast<size_t>(kMaxLength)) return err(ptr, "property name too long");
      }
      prim("j-char");
      key = add_rule(
          string_not_in_expr(names, [this](std::string b) { return add_rule(std::move(b)); }));
    }
    extra_kv = add_rule(fmt::format("{} {} \":\" {} {} {}", key, ws, ws, value, ws));
    extra_more = add_rule(fmt::format("( \",\" {} {} )*", ws, extra_kv));
  }
  // a: nothing written yet; b: something written, so the next property needs a comma.
  std::string a =
      allow_extra ? add_rule(fmt::format("{} {} | ", extra_kv, extra_more)) : add_rule("");
  std::string b = allow_extra ? extra_more : add_rule("");
  for (size_t i = decls.size(); i-- > 0;) {
    const Decl& d = decls[i];
    std::string kv =
        fmt::format("{} {} \":\" {} {} {}", gbnf_literal(json(d.key).dump()), ws, ws, d.value, ws);
    std::string na = fmt::format("{} {}", kv, b);
    std::string nb = fmt::format("\",\" {} {} {}", ws, kv, b);
    if (!d.required) {
      na += " | " + a;
      nb += " | " + b;
    }
    a = add_rule(std::move(na));
    b = add_rule(std::move(nb));
  }
  return add_rule(fmt::format("\"{{\" {} {} \"}}\"", ws, a));
}

template <class J>
Result<std::string> Converter<J>::visit_array(const json& s, const std::string& ptr, int depth) {
  if (s.contains("uniqueItems") && s["uniqueItems"] != json(false)) {
    return err(ptr, "unsupported keyword 'uniqueItems' (true)");
  }
  std::vector<std::string> prefix;
  if (s.contains("prefixItems")) {
    if (!s["prefixItems"].is_array()) return err(ptr, "'prefixItems' must be an array");
    for (size_t i = 0; i < s["prefixItems"].size(); ++i) {
      RIDGE_ASSIGN_OR_RETURN(
          std::string e,
          visit(s["prefixItems"][i], fmt::format("{}/prefixItems/{}", ptr, i), depth + 1));
      prefix.push_back(std::move(e));
    }
  }
  std::string item = prim("j-value");
  bool more = true;  // items after the prefix allowed
  if (s.contains("items")) {
    const json& it = s["items"];
    if (it.is_array())
      return err(ptr + "/items", "the array form of 'items' is not supported (use 'prefixItems')");
    if (it == json(false)) {
      more = false;
    } else {
      RIDGE_ASSIGN_OR_RETURN(item, visit(it, ptr + "/items", depth + 1));
    }
  }
  RIDGE_ASSIGN_OR_RETURN(int64_t lo, count(s, "minItems", ptr, 0, kMaxItems));
  RIDGE_ASSIGN_OR_RETURN(int64_t hi, count(s, "maxItems", ptr, -1, kMaxItems));
  const auto k = static_cast<int64_t>(prefix.size());
  if (!more) hi = hi < 0 ? k : std::min(hi, k);
  if (hi >= 0 && lo > hi) return err(ptr, "'minItems' is larger than the items allowed");
  int64_t j = std::max(k, lo);
  if (hi >= 0) j = std::min(j, hi);
  const std::string ws = prim("j-ws");
  auto item_at = [&](int64_t i) { return i < k ? prefix[static_cast<size_t>(i)] : item; };
  // The tail after position j: more items of `item`, up to hi in all.
  std::string tail;
  const int64_t room = hi < 0 ? -1 : hi - j;
  if (room != 0 && (more || j < k)) {
    const std::string rep = room < 0 ? "*" : fmt::format("{{0,{}}}", room);
    const std::string rep1 = room < 0 ? "*" : fmt::format("{{0,{}}}", room - 1);
    if (j == 0) {
      tail = fmt::format("( {} {} ( \",\" {} {} {} ){} )?", item, ws, ws, item, ws, rep1);
    } else {
      tail = fmt::format("( \",\" {} {} {} ){}", ws, item, ws, rep);
    }
  }
  std::string e = add_rule(tail);
  for (int64_t i = j; i-- > 0;) {
    std::string body =
        fmt::format("{}{} {} {}", i ? fmt::format("\",\" {} ", ws) : "", item_at(i), ws, e);
    if (i >= lo) body += " | ";
    e = add_rule(std::move(body));
  }
  return add_rule(fmt::format("\"[\" {} {} \"]\"", ws, e));
}

// Both document models (json_schema.cpp has the other members).
template class Converter<nlohmann::json>;
template class Converter<nlohmann::ordered_json>;

}  // namespace ridge::grammar::detail

namespace ridge::grammar {

namespace {

template <class J>
Result<std::string> convert(const J& schema) {
  try {
    detail::Converter<J> c(schema);
    RIDGE_ASSIGN_OR_RETURN(std::string text, c.run());
    auto g = parse_gbnf(text);
    if (!g.ok()) {
      return Status::usage("json_schema: the schema gives an unusable grammar: " +
                           g.status().message());
    }
    return text;
  } catch (const std::exception& e) {
    return Status::usage(std::string("json_schema: invalid schema: ") + e.what());
  }
}

}  // namespace

Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema) { return convert(schema); }

Result<std::string> json_schema_to_gbnf_ordered(const nlohmann::ordered_json& schema) {
  return convert(schema);
}

std::string any_json_object_gbnf() {
  const nlohmann::json empty = nlohmann::json::object();
  detail::Converter<nlohmann::json> c(empty);
  return c.text(c.prim("j-object"));
}

Result<std::string> regex_to_gbnf(std::string_view pattern) {
  auto expr = detail::regex_to_gbnf(pattern, detail::RegexTarget::kText);
  if (!expr.ok()) {
    std::string m(expr.status().message());
    if (m.starts_with("pattern: ")) m.erase(0, 9);
    return Status::usage(fmt::format("regex: {}", m));
  }
  return fmt::format("root ::= {}\n", *expr);
}

}  // namespace ridge::grammar
