#include "chat/jinja/py_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace ridge::chat::jinja {
namespace {

// Not printable for str.isprintable(): Cc, Cf, Zs (but space), Zl, Zp, Co, Cs. Unassigned code
// points (Cn) are not tracked: they print as themselves.
bool py_isprintable(uint32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) return false;
  if (cp < 0x600) return true;
  static constexpr std::pair<uint32_t, uint32_t> kRanges[] = {
      {0x600, 0x605},     {0x61C, 0x61C},     {0x6DD, 0x6DD},     {0x70F, 0x70F},
      {0x890, 0x891},     {0x8E2, 0x8E2},     {0x1680, 0x1680},   {0x180E, 0x180E},
      {0x2000, 0x200F},   {0x2028, 0x202F},   {0x205F, 0x2064},   {0x2066, 0x206F},
      {0x3000, 0x3000},   {0xD800, 0xF8FF},   {0xFEFF, 0xFEFF},   {0xFFF9, 0xFFFB},
      {0x110BD, 0x110BD}, {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3},
      {0x1D173, 0x1D17A}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F}, {0xF0000, 0x10FFFF},
  };
  for (const auto& [lo, hi] : kRanges) {
    if (cp >= lo && cp <= hi) return false;
  }
  return true;
}

Result<std::string> json_key(const Value& k) {
  switch (k.kind) {
    case Kind::kString:
      return k.str().s;
    case Kind::kInt:
      return std::to_string(k.as_int());
    case Kind::kFloat:
      return py_float_repr(k.as_double());
    case Kind::kBool:
      return std::string(k.as_bool() ? "true" : "false");
    case Kind::kNone:
      return std::string("null");
    default:
      return Status::usage(
          fmt::format("keys must be str, int, float, bool or None, not {}", type_name(k)));
  }
}

void json_string(std::string_view s, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  size_t pos = 0;
  while (pos < s.size()) {
    size_t start = pos;
    uint32_t cp = decode_cp(s, &pos);
    switch (cp) {
      case '"':
        *out += "\\\"";
        continue;
      case '\\':
        *out += "\\\\";
        continue;
      case '\n':
        *out += "\\n";
        continue;
      case '\r':
        *out += "\\r";
        continue;
      case '\t':
        *out += "\\t";
        continue;
      case '\b':
        *out += "\\b";
        continue;
      case '\f':
        *out += "\\f";
        continue;
      default:
        break;
    }
    if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
      if (cp >= 0x10000) {
        uint32_t v = cp - 0x10000;
        *out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        *out += fmt::format("\\u{:04x}", cp);
      }
      continue;
    }
    out->append(s.substr(start, pos - start));
  }
  out->push_back('"');
}

Status json_value(const Value& v, const JsonOptions& o, int level, std::string* out) {
  if (level > kMaxDepth) return Status::usage("tojson: value nested too deeply");
  auto newline = [&](int lvl) {
    if (!o.has_indent) return;
    out->push_back('\n');
    for (int i = 0; i < lvl; ++i) *out += o.indent;
  };
  switch (v.kind) {
    case Kind::kNone:
      *out += "null";
      return ok_status();
    case Kind::kBool:
      *out += v.as_bool() ? "true" : "false";
      return ok_status();
    case Kind::kInt:
      *out += std::to_string(v.as_int());
      return ok_status();
    case Kind::kFloat: {
      double d = v.as_double();
      if (std::isnan(d))
        *out += "NaN";
      else if (std::isinf(d))
        *out += d > 0 ? "Infinity" : "-Infinity";
      else
        *out += py_float_repr(d);
      return ok_status();
    }
    case Kind::kString:
      json_string(v.str().s, o.ensure_ascii, out);
      return ok_status();
    case Kind::kList:
    case Kind::kTuple: {
      const auto& items = v.items();
      if (items.empty()) {
        *out += "[]";
        return ok_status();
      }
      out->push_back('[');
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) *out += o.item_sep;
        newline(level + 1);
        RIDGE_RETURN_IF_ERROR(json_value(items[i], o, level + 1, out));
      }
      newline(level);
      out->push_back(']');
      return ok_status();
    }
    case Kind::kDict: {
      const auto& entries = v.dict().entries;
      if (entries.empty()) {
        *out += "{}";
        return ok_status();
      }
      std::vector<std::pair<std::string, const Value*>> kv;
      kv.reserve(entries.size());
      for (const auto& [k, x] : entries) {
        RIDGE_ASSIGN_OR_RETURN(std::string key, json_key(k));
        kv.emplace_back(std::move(key), &x);
      }
      if (o.sort_keys) {
        std::stable_sort(kv.begin(), kv.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      }
      out->push_back('{');
      for (size_t i = 0; i < kv.size(); ++i) {
        if (i > 0) *out += o.item_sep;
        newline(level + 1);
        json_string(kv[i].first, o.ensure_ascii, out);
        *out += o.key_sep;
        RIDGE_RETURN_IF_ERROR(json_value(*kv[i].second, o, level + 1, out));
      }
      newline(level);
      out->push_back('}');
      return ok_status();
    }
    default:
      return Status::usage(fmt::format("Object of type {} is not JSON serializable", type_name(v)));
  }
}

}  // namespace

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  std::string out;
  if (s[0] == '-') {
    out = "-";
    s.erase(0, 1);
  }
  size_t epos = s.find('e');
  std::string digits = s.substr(0, epos);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  int exp = std::stoi(s.substr(epos + 1));
  int decpt = exp + 1;
  int n = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (decpt >= n) {
      out += digits + std::string(static_cast<size_t>(decpt - n), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt)) + "." +
             digits.substr(static_cast<size_t>(decpt));
    }
  } else {
    out += digits.substr(0, 1);
    if (n > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02d}", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  }
  return out;
}

std::string py_str_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  size_t pos = 0;
  while (pos < s.size()) {
    size_t start = pos;
    uint32_t cp = decode_cp(s, &pos);
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7F) {
      out += fmt::format("\\x{:02x}", cp);
    } else if (cp < 0x7F || py_isprintable(cp)) {
      out.append(s.substr(start, pos - start));
    } else if (cp <= 0xFF) {
      out += fmt::format("\\x{:02x}", cp);
    } else if (cp <= 0xFFFF) {
      out += fmt::format("\\u{:04x}", cp);
    } else {
      out += fmt::format("\\U{:08x}", cp);
    }
  }
  out.push_back(quote);
  return out;
}

Result<std::string> py_repr(const Value& v, int depth) {
  if (depth > kMaxDepth) return Status::usage("value nested too deeply to print");
  switch (v.kind) {
    case Kind::kUndefined:
      return std::string("Undefined");
    case Kind::kNone:
      return std::string("None");
    case Kind::kBool:
      return std::string(v.as_bool() ? "True" : "False");
    case Kind::kInt:
      return std::to_string(v.as_int());
    case Kind::kFloat:
      return py_float_repr(v.as_double());
    case Kind::kString:
      return v.str().markup ? "Markup(" + py_str_repr(v.str().s) + ")" : py_str_repr(v.str().s);
    case Kind::kList:
    case Kind::kTuple: {
      bool tuple = v.kind == Kind::kTuple;
      std::string out(1, tuple ? '(' : '[');
      const auto& items = v.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ", ";
        RIDGE_ASSIGN_OR_RETURN(std::string s, py_repr(items[i], depth + 1));
        out += s;
      }
      if (tuple && items.size() == 1) out += ",";
      out += tuple ? ')' : ']';
      return out;
    }
    case Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.dict().entries) {
        if (!first) out += ", ";
        first = false;
        RIDGE_ASSIGN_OR_RETURN(std::string ks, py_repr(k, depth + 1));
        RIDGE_ASSIGN_OR_RETURN(std::string xs, py_repr(x, depth + 1));
        out += ks + ": " + xs;
      }
      return out + "}";
    }
    case Kind::kNamespace: {
      std::string out = "<Namespace {";
      bool first = true;
      for (const auto& [k, x] : v.obj().attrs) {
        if (!first) out += ", ";
        first = false;
        RIDGE_ASSIGN_OR_RETURN(std::string xs, py_repr(x, depth + 1));
        out += py_str_repr(k) + ": " + xs;
      }
      return out + "}>";
    }
    case Kind::kLoop:
      return std::string("<LoopContext>");
    case Kind::kCallable:
      return fmt::format("<function {}>", v.fn().name);
  }
  return std::string();
}

Result<TString> py_str(const Value& v) {
  if (v.is_string()) return v.str();
  if (v.is_undefined()) return TString();
  RIDGE_ASSIGN_OR_RETURN(std::string s, py_repr(v));
  return TString::derived(std::move(s), any_tainted(v));
}

Result<std::string> py_json(const Value& v, const JsonOptions& opts) {
  std::string out;
  RIDGE_RETURN_IF_ERROR(json_value(v, opts, 0, &out));
  return out;
}

}  // namespace ridge::chat::jinja
