// Filters, with jinja2 3.1 semantics (and Hugging Face's tojson).
#include "chat/jinja/filters.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "chat/jinja/evaluator.h"
#include "chat/jinja/filters_internal.h"
#include "chat/jinja/py_format.h"
#include "chat/jinja/str_ops.h"

namespace ridge::chat::jinja {

const Value* CallArgs::get(size_t index, std::string_view name) const {
  if (index < pos.size()) return &pos[index];
  for (const auto& [k, v] : kw) {
    if (k == name) return &v;
  }
  return nullptr;
}

namespace {

using namespace filter_impl;  // NOLINT(google-build-using-namespace)
using FilterFn = Result<Value> (*)(Renderer&, const Value&, const CallArgs&);

Result<Value> f_tojson(Renderer&, const Value& v, const CallArgs& a) {
  JsonOptions o;
  o.ensure_ascii = arg_bool(a, 0, "ensure_ascii", false);
  const Value* indent = a.get(1, "indent");
  if (indent != nullptr && !indent->is_none()) {
    o.has_indent = true;
    if (indent->is_string()) {
      o.indent = indent->str().s;
    } else if (indent->kind == Kind::kInt) {
      o.indent =
          std::string(static_cast<size_t>(std::clamp<int64_t>(indent->as_int(), 0, 64)), ' ');
    } else {
      return Status::usage("tojson: indent must be an int or a string");
    }
    o.item_sep.assign(1, ',');
  }
  const Value* seps = a.get(2, "separators");
  if (seps != nullptr && !seps->is_none()) {
    if (!seps->is_list() || seps->items().size() != 2 || !seps->items()[0].is_string() ||
        !seps->items()[1].is_string()) {
      return Status::usage("tojson: separators must be a pair of strings");
    }
    o.item_sep = seps->items()[0].str().s;
    o.key_sep = seps->items()[1].str().s;
  }
  o.sort_keys = arg_bool(a, 3, "sort_keys", false);
  RIDGE_ASSIGN_OR_RETURN(std::string s, py_json(v, o));
  return Value::string(TString::derived(std::move(s), any_tainted(v)));
}

Result<Value> f_trim(Renderer&, const Value& v, const CallArgs& a) {
  RIDGE_ASSIGN_OR_RETURN(TString s, to_str(v));
  std::optional<std::string_view> chars;
  const Value* c = a.get(0, "chars");
  if (c != nullptr && c->is_string()) chars = c->str().s;
  return Value::string(py_strip(s, chars, StripSide::kBoth));
}

Result<Value> f_length(Renderer&, const Value& v, const CallArgs&) {
  switch (v.kind) {
    case Kind::kUndefined:
      return Value::integer(0);
    case Kind::kString:
      return Value::integer(static_cast<int64_t>(cp_count(v.str().s)));
    case Kind::kList:
    case Kind::kTuple:
      return Value::integer(static_cast<int64_t>(v.items().size()));
    case Kind::kDict:
      return Value::integer(static_cast<int64_t>(v.dict().entries.size()));
    default:
      return Status::usage(fmt::format("object of type '{}' has no len()", type_name(v)));
  }
}

Result<Value> f_default(Renderer&, const Value& v, const CallArgs& a) {
  bool boolean = arg_bool(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !truthy(v))) {
    const Value* d = a.get(0, "default_value");
    return d != nullptr ? *d : Value::string(std::string());
  }
  return v;
}

Result<Value> f_string(Renderer&, const Value& v, const CallArgs&) {
  RIDGE_ASSIGN_OR_RETURN(TString s, to_str(v));
  return Value::string(std::move(s));
}

// jinja2's |title (not str.title): each piece after a run of "-", whitespace, "(", "{", "[",
// "<" gets its first character upper-cased and the rest lower-cased.
Result<Value> f_title(Renderer&, const Value& v, const CallArgs&) {
  RIDGE_ASSIGN_OR_RETURN(TString s, to_str(v));
  auto is_sep = [](uint32_t c) {
    return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c);
  };
  std::vector<size_t> offs = cp_offsets(s.s);
  TString out;
  bool piece_start = true;
  for (size_t i = 0; i + 1 < offs.size(); ++i) {
    size_t p = offs[i];
    uint32_t c = decode_cp(s.s, &p);
    TString ch = s.substr(offs[i], offs[i + 1]);
    if (is_sep(c)) {
      // a separator run is a piece of its own: its first char is "upper-cased" (unchanged)
      out.append(ch);
      piece_start = true;
      continue;
    }
    out.append(py_case(ch, piece_start ? CaseOp::kUpper : CaseOp::kLower));
    piece_start = false;
  }
  return Value::string(std::move(out));
}

template <CaseOp kOp>
Result<Value> f_case(Renderer&, const Value& v, const CallArgs&) {
  RIDGE_ASSIGN_OR_RETURN(TString s, to_str(v));
  return Value::string(py_case(s, kOp));
}

Result<Value> f_replace(Renderer&, const Value& v, const CallArgs& a) {
  RIDGE_ASSIGN_OR_RETURN(TString s, to_str(v));
  const Value* o = a.get(0, "old");
  const Value* n = a.get(1, "new");
  if (o == nullptr || n == nullptr) return Status::usage("replace: expected old and new");
  RIDGE_ASSIGN_OR_RETURN(TString os, to_str(*o));
  RIDGE_ASSIGN_OR_RETURN(TString ns, to_str(*n));
  int64_t count = -1;
  if (const Value* c = a.get(2, "count"); c != nullptr && !c->is_none()) count = c->as_int();
  return Value::string(py_replace(s, os.s, ns, count));
}

Result<Value> f_safe(Renderer&, const Value& v, const CallArgs&) {
  RIDGE_ASSIGN_OR_RETURN(TString s, to_str(v));
  s.markup = true;
  return Value::string(std::move(s));
}

Result<Value> f_int(Renderer&, const Value& v, const CallArgs& a) {
  const Value* d = a.get(0, "default");
  Value def = d != nullptr ? *d : Value::integer(0);
  if (v.kind == Kind::kInt || v.kind == Kind::kBool) return Value::integer(v.as_int());
  if (v.kind == Kind::kFloat) {
    double x = std::trunc(v.as_double());
    if (!std::isfinite(x) || std::fabs(x) > 9e18) return def;
    return Value::integer(static_cast<int64_t>(x));
  }
  if (!v.is_string()) return def;
  std::string s = py_strip(v.str(), std::nullopt, StripSide::kBoth).s;
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(s.c_str(), &end, 10);
  if (!s.empty() && end == s.c_str() + s.size() && errno == 0) return Value::integer(i);
  double x = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(x) && std::fabs(x) < 9e18) {
    return Value::integer(static_cast<int64_t>(std::trunc(x)));
  }
  return def;
}

Result<Value> f_float(Renderer&, const Value& v, const CallArgs& a) {
  const Value* d = a.get(0, "default");
  Value def = d != nullptr ? *d : Value::number(0.0);
  if (v.is_numeric()) return Value::number(v.as_double());
  if (!v.is_string()) return def;
  std::string s = py_strip(v.str(), std::nullopt, StripSide::kBoth).s;
  char* end = nullptr;
  double x = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) return def;
  return Value::number(x);
}

Result<Value> f_abs(Renderer&, const Value& v, const CallArgs&) {
  if (v.kind == Kind::kFloat) return Value::number(std::fabs(v.as_double()));
  if (v.kind == Kind::kInt || v.kind == Kind::kBool) {
    if (v.as_int() == INT64_MIN) return Status::usage("integer overflow");
    return Value::integer(std::llabs(v.as_int()));
  }
  return Status::usage(fmt::format("bad operand type for abs(): '{}'", type_name(v)));
}

Result<Value> f_round(Renderer&, const Value& v, const CallArgs& a) {
  if (!v.is_numeric()) return Status::usage("round: expected a number");
  int64_t prec = 0;
  if (const Value* p = a.get(0, "precision")) prec = p->as_int();
  std::string method = "common";
  if (const Value* m = a.get(1, "method"); m != nullptr && m->is_string()) method = m->str().s;
  double x = v.as_double(), scale = std::pow(10.0, static_cast<double>(prec));
  if (method == "common") {  // Python's round(): correctly rounded, ties to even
    if (prec >= 0 && prec <= 30 && std::isfinite(x)) {
      return Value::number(std::strtod(fmt::format("{:.{}f}", x, prec).c_str(), nullptr));
    }
    return Value::number(std::nearbyint(x * scale) / scale);
  }
  if (method == "floor") return Value::number(std::floor(x * scale) / scale);
  if (method == "ceil") return Value::number(std::ceil(x * scale) / scale);
  return Status::usage("method must be 'common', 'ceil' or 'floor'");
}

Result<Value> f_escape(Renderer&, const Value& v, const CallArgs&) {
  RIDGE_ASSIGN_OR_RETURN(TString s, to_str(v));
  if (s.markup) return Value::string(std::move(s));
  std::string out = html_escape(s.s);
  TString r = TString::derived(std::move(out), s.tainted());
  r.markup = true;
  return Value::string(std::move(r));
}

Result<Value> f_indent(Renderer&, const Value& v, const CallArgs& a) {
  RIDGE_ASSIGN_OR_RETURN(TString s, to_str(v));
  std::string pad = "    ";
  if (const Value* w = a.get(0, "width")) {
    if (w->is_string())
      pad = w->str().s;
    else
      pad = std::string(static_cast<size_t>(std::clamp<int64_t>(w->as_int(), 0, 256)), ' ');
  }
  bool first = arg_bool(a, 1, "first", false), blank = arg_bool(a, 2, "blank", false);
  TString out;
  size_t start = 0;
  bool is_first = true;
  while (start <= s.s.size()) {
    size_t nl = s.s.find('\n', start);
    size_t end = nl == std::string::npos ? s.s.size() : nl;
    bool empty = end == start;
    if ((is_first ? first : true) && (blank || !empty)) out.append_plain(pad);
    out.append(s.substr(start, nl == std::string::npos ? end : end + 1));
    is_first = false;
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return Value::string(std::move(out));
}

Result<Value> f_wordcount(Renderer&, const Value& v, const CallArgs&) {
  RIDGE_ASSIGN_OR_RETURN(TString s, to_str(v));
  int64_t n = 0;
  bool in_word = false;
  for (char c : s.s) {
    bool w = std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
             static_cast<unsigned char>(c) >= 0x80;
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

Result<Value> f_attr(Renderer& r, const Value& v, const CallArgs& a) {
  const Value* n = a.get(0, "name");
  if (n == nullptr || !n->is_string()) return Status::usage("attr: expected a name");
  return r.get_attr(v, n->str().s);
}

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};

constexpr FilterEntry kFilters[] = {
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"length", f_length},
    {"count", f_length},
    {"items", f_items},
    {"list", f_list},
    {"select", f_select},
    {"reject", f_reject},
    {"selectattr", f_selectattr},
    {"rejectattr", f_rejectattr},
    {"map", f_map},
    {"join", f_join},
    {"default", f_default},
    {"d", f_default},
    {"string", f_string},
    {"upper", f_case<CaseOp::kUpper>},
    {"lower", f_case<CaseOp::kLower>},
    {"title", f_title},
    {"capitalize", f_case<CaseOp::kCapitalize>},
    {"replace", f_replace},
    {"first", f_first},
    {"last", f_last},
    {"unique", f_unique},
    {"sort", f_sort},
    {"dictsort", f_dictsort},
    {"reverse", f_reverse},
    {"safe", f_safe},
    {"int", f_int},
    {"float", f_float},
    {"abs", f_abs},
    {"round", f_round},
    {"escape", f_escape},
    {"e", f_escape},
    {"indent", f_indent},
    {"wordcount", f_wordcount},
    {"attr", f_attr},
    {"sum", f_sum},
    {"max", f_max},
    {"min", f_min},
    {"batch", f_batch},
};

}  // namespace

int find_filter(std::string_view name) {
  for (size_t i = 0; i < std::size(kFilters); ++i) {
    if (kFilters[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

Result<Value> apply_filter(Renderer& r, int id, const Value& input, const CallArgs& args) {
  if (id < 0 || static_cast<size_t>(id) >= std::size(kFilters)) {
    return Status::usage("unknown filter");
  }
  return kFilters[id].fn(r, input, args);
}

Result<Value> apply_filter_named(Renderer& r, std::string_view name, const Value& input,
                                 const CallArgs& args) {
  int id = find_filter(name);
  if (id < 0) return Status::usage(fmt::format("no filter named '{}'", name));
  return apply_filter(r, id, input, args);
}

}  // namespace ridge::chat::jinja
