// Methods reachable from templates (str, dict, list, loop) and the globals (range, namespace,
// dict, raise_exception, strftime_now). Mutating methods are absent, as in jinja2's
// ImmutableSandboxedEnvironment.
#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "chat/jinja/evaluator.h"
#include "chat/jinja/py_format.h"
#include "chat/jinja/str_ops.h"

namespace ridge::chat::jinja {
namespace {

constexpr std::string_view kStrMethods[] = {
    "startswith", "endswith", "split",   "rsplit",       "strip",       "lstrip",  "rstrip",
    "upper",      "lower",    "title",   "capitalize",   "swapcase",    "replace", "find",
    "rfind",      "count",    "join",    "splitlines",   "isdigit",     "isalpha", "isalnum",
    "isspace",    "islower",  "isupper", "removeprefix", "removesuffix"};
constexpr std::string_view kDictMethods[] = {"get", "items", "keys", "values"};
constexpr std::string_view kListMethods[] = {"index", "count"};

template <size_t N>
bool in(const std::string_view (&names)[N], std::string_view n) {
  return std::find(std::begin(names), std::end(names), n) != std::end(names);
}

Status arg_error(std::string_view name, std::string_view what) {
  return Status::usage(fmt::format("{}(): {}", name, what));
}

Result<std::optional<std::string_view>> opt_str(const CallArgs& a, size_t i, std::string_view kw,
                                                std::string_view fn) {
  const Value* v = a.get(i, kw);
  if (v == nullptr || v->is_none()) return std::optional<std::string_view>();
  if (!v->is_string()) return arg_error(fn, "argument must be str or None");
  return std::optional<std::string_view>(v->str().s);
}

Result<int64_t> opt_int(const CallArgs& a, size_t i, std::string_view kw, int64_t def,
                        std::string_view fn) {
  const Value* v = a.get(i, kw);
  if (v == nullptr) return def;
  if (v->kind != Kind::kInt && v->kind != Kind::kBool) {
    return arg_error(fn, "argument must be an integer");
  }
  return v->as_int();
}

Result<std::vector<std::string_view>> affixes(const CallArgs& a, std::string_view fn) {
  const Value* v = a.get(0, "");
  if (v == nullptr) return arg_error(fn, "takes at least 1 argument");
  std::vector<std::string_view> out;
  if (v->is_string()) {
    out.push_back(v->str().s);
  } else if (v->kind == Kind::kTuple) {
    for (const auto& x : v->items()) {
      if (!x.is_string()) return arg_error(fn, "tuple for startswith must only contain str");
      out.push_back(x.str().s);
    }
  } else {
    return arg_error(fn, "first arg must be str or a tuple of str");
  }
  return out;
}

Result<Value> str_method(Renderer& r, const TString& s, std::string_view name, const CallArgs& a) {
  (void)r;
  if (name == "startswith" || name == "endswith") {
    RIDGE_ASSIGN_OR_RETURN(auto fixes, affixes(a, name));
    for (auto f : fixes) {
      bool m = f.size() <= s.s.size() &&
               (name == "startswith" ? s.s.compare(0, f.size(), f) == 0
                                     : s.s.compare(s.s.size() - f.size(), f.size(), f) == 0);
      if (m) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  if (name == "split" || name == "rsplit") {
    RIDGE_ASSIGN_OR_RETURN(auto sep, opt_str(a, 0, "sep", name));
    RIDGE_ASSIGN_OR_RETURN(int64_t maxsplit, opt_int(a, 1, "maxsplit", -1, name));
    if (sep && sep->empty()) return Status::usage("empty separator");
    ValueList out;
    for (auto& piece : py_split(s, sep, maxsplit, name == "rsplit")) {
      out.push_back(Value::string(std::move(piece)));
    }
    return Value::list(std::move(out));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    RIDGE_ASSIGN_OR_RETURN(auto chars, opt_str(a, 0, "chars", name));
    StripSide side = name == "strip" ? StripSide::kBoth
                                     : (name == "lstrip" ? StripSide::kLeft : StripSide::kRight);
    return Value::string(py_strip(s, chars, side));
  }
  if (name == "upper") return Value::string(py_case(s, CaseOp::kUpper));
  if (name == "lower") return Value::string(py_case(s, CaseOp::kLower));
  if (name == "title") return Value::string(py_case(s, CaseOp::kTitle));
  if (name == "capitalize") return Value::string(py_case(s, CaseOp::kCapitalize));
  if (name == "swapcase") return Value::string(py_case(s, CaseOp::kSwap));
  if (name == "replace") {
    const Value* o = a.get(0, "old");
    const Value* n = a.get(1, "new");
    if (o == nullptr || n == nullptr || !o->is_string() || !n->is_string()) {
      return arg_error(name, "arguments must be str");
    }
    RIDGE_ASSIGN_OR_RETURN(int64_t count, opt_int(a, 2, "count", -1, name));
    return Value::string(py_replace(s, o->str().s, n->str(), count));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    const Value* sub = a.get(0, "");
    if (sub == nullptr || !sub->is_string()) return arg_error(name, "argument must be str");
    const std::string& needle = sub->str().s;
    if (name == "count") {
      if (needle.empty()) return Value::integer(static_cast<int64_t>(cp_count(s.s)) + 1);
      int64_t c = 0;
      for (size_t p = s.s.find(needle); p != std::string::npos;
           p = s.s.find(needle, p + needle.size())) {
        ++c;
      }
      return Value::integer(c);
    }
    size_t p = name == "find" ? s.s.find(needle) : s.s.rfind(needle);
    if (p == std::string::npos) return Value::integer(-1);
    return Value::integer(static_cast<int64_t>(cp_count(std::string_view(s.s).substr(0, p))));
  }
  if (name == "join") {
    const Value* it = a.get(0, "iterable");
    if (it == nullptr) return arg_error(name, "takes exactly one argument");
    RIDGE_ASSIGN_OR_RETURN(auto items, r.iterate(*it));
    TString out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) {
        return Status::usage(fmt::format("sequence item {}: expected str instance, {} found", i,
                                         type_name(items[i])));
      }
      if (i > 0) out.append(s);
      out.append(items[i].str());
    }
    return Value::string(std::move(out));
  }
  if (name == "splitlines") {
    ValueList out;
    size_t start = 0;
    for (size_t i = 0; i < s.s.size(); ++i) {
      if (s.s[i] == '\n' || s.s[i] == '\r') {
        out.push_back(Value::string(s.substr(start, i)));
        if (s.s[i] == '\r' && i + 1 < s.s.size() && s.s[i + 1] == '\n') ++i;
        start = i + 1;
      }
    }
    if (start < s.s.size()) out.push_back(Value::string(s.substr(start, s.s.size())));
    return Value::list(std::move(out));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const Value* f = a.get(0, "");
    if (f == nullptr || !f->is_string()) return arg_error(name, "argument must be str");
    const std::string& x = f->str().s;
    if (name == "removeprefix" && s.s.compare(0, x.size(), x) == 0) {
      return Value::string(s.substr(x.size(), s.s.size()));
    }
    if (name == "removesuffix" && !x.empty() && x.size() <= s.s.size() &&
        s.s.compare(s.s.size() - x.size(), x.size(), x) == 0) {
      return Value::string(s.substr(0, s.s.size() - x.size()));
    }
    return Value::string(s);
  }
  if (name == "islower") return Value::boolean(py_is_cased_lower(s.s));
  if (name == "isupper") return Value::boolean(py_is_cased_upper(s.s));
  // isdigit / isalpha / isalnum / isspace (ASCII classes, plus Unicode whitespace)
  if (s.s.empty()) return Value::boolean(false);
  size_t p = 0;
  while (p < s.s.size()) {
    uint32_t c = decode_cp(s.s, &p);
    bool digit = c >= '0' && c <= '9';
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0xC0;
    bool ok = name == "isdigit"   ? digit
              : name == "isalpha" ? alpha
              : name == "isalnum" ? (digit || alpha)
                                  : py_isspace(c);
    if (!ok) return Value::boolean(false);
  }
  return Value::boolean(true);
}

}  // namespace

bool has_method(const Value& self, std::string_view name) {
  switch (self.kind) {
    case Kind::kString:
      return in(kStrMethods, name);
    case Kind::kDict:
      return in(kDictMethods, name);
    case Kind::kList:
    case Kind::kTuple:
      return in(kListMethods, name);
    case Kind::kLoop:
      return name == "cycle";
    default:
      return false;
  }
}

Result<Value> call_method(Renderer& r, const Value& self, std::string_view name,
                          const CallArgs& a) {
  if (self.is_string()) return str_method(r, self.str(), name, a);
  if (self.is_dict()) {
    const auto& entries = self.dict().entries;
    if (name == "get") {
      const Value* k = a.get(0, "key");
      if (k == nullptr) return arg_error(name, "expected at least 1 argument");
      if (const Value* v = self.dict().find(*k)) return *v;
      const Value* d = a.get(1, "default");
      return d != nullptr ? *d : Value::none();
    }
    ValueList out;
    for (const auto& [k, v] : entries) {
      if (name == "items")
        out.push_back(Value::list({k, v}, true));
      else
        out.push_back(name == "keys" ? k : v);
    }
    return Value::list(std::move(out));
  }
  if (self.is_list()) {
    const Value* x = a.get(0, "");
    if (x == nullptr) return arg_error(name, "takes exactly one argument");
    int64_t count = 0;
    for (size_t i = 0; i < self.items().size(); ++i) {
      if (!equals(self.items()[i], *x)) continue;
      if (name == "index") return Value::integer(static_cast<int64_t>(i));
      ++count;
    }
    if (name == "index") return Status::usage("list.index(x): x not in list");
    return Value::integer(count);
  }
  if (self.kind == Kind::kLoop && name == "cycle") {
    if (a.pos.empty()) return Status::usage("no items for cycling given");
    return a.pos[static_cast<size_t>(self.obj().loop_index) % a.pos.size()];
  }
  return Status::usage(fmt::format("'{}' object has no method '{}'", type_name(self), name));
}

Result<Value> call_builtin(Renderer& r, std::string_view name, const CallArgs& a) {
  if (name == "raise_exception") {
    const Value* m = a.get(0, "message");
    std::string msg;
    if (m != nullptr) {
      RIDGE_ASSIGN_OR_RETURN(TString t, py_str(*m));
      msg = t.s;
    }
    return r.raise(std::move(msg));
  }
  if (name == "strftime_now") {
    const Value* f = a.get(0, "format");
    if (f == nullptr || !f->is_string()) return arg_error(name, "format must be a string");
    std::time_t t = r.now_unix() >= 0 ? static_cast<std::time_t>(r.now_unix()) : std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    // Python handles %Z ("UTC" for an aware UTC datetime) and %f itself; the rest is C's.
    std::string fmt_s;
    const std::string& in_fmt = f->str().s;
    for (size_t i = 0; i < in_fmt.size(); ++i) {
      if (in_fmt[i] == '%' && i + 1 < in_fmt.size()) {
        char c = in_fmt[i + 1];
        fmt_s += c == 'Z'   ? std::string("UTC")
                 : c == 'f' ? std::string("000000")
                            : std::string{'%', c};
        ++i;
      } else {
        fmt_s.push_back(in_fmt[i]);
      }
    }
    if (fmt_s.empty()) return Value::string(std::string());
    std::string buf(256 + fmt_s.size() * 16, '\0');
    size_t n = std::strftime(buf.data(), buf.size(), fmt_s.c_str(), &tm);
    buf.resize(n);
    return Value::string(std::move(buf));
  }
  if (name == "range") {
    int64_t start = 0, stop = 0, step = 1;
    for (const auto& v : a.pos) {
      if (v.kind != Kind::kInt && v.kind != Kind::kBool) {
        return Status::usage(
            fmt::format("'{}' object cannot be interpreted as an integer", type_name(v)));
      }
    }
    if (a.pos.size() == 1) {
      stop = a.pos[0].as_int();
    } else if (a.pos.size() == 2 || a.pos.size() == 3) {
      start = a.pos[0].as_int();
      stop = a.pos[1].as_int();
      if (a.pos.size() == 3) step = a.pos[2].as_int();
    } else {
      return arg_error(name, "expected 1 to 3 integer arguments");
    }
    if (step == 0) return Status::usage("range() arg 3 must not be zero");
    double count =
        (static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step);
    if (count > 1e6) return Status::usage("range() too large");
    ValueList out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      out.push_back(Value::integer(i));
    }
    return Value::list(std::move(out));
  }
  if (name == "namespace" || name == "dict") {
    std::vector<std::pair<std::string, Value>> attrs;
    for (const auto& v : a.pos) {
      if (!v.is_dict()) return arg_error(name, "positional argument must be a dict");
      for (const auto& [k, x] : v.dict().entries) {
        if (!k.is_string()) return arg_error(name, "keywords must be strings");
        attrs.emplace_back(k.str().s, x);
      }
    }
    for (const auto& [k, x] : a.kw) attrs.emplace_back(k, x);
    if (name == "namespace") {
      auto o = std::make_shared<Object>();
      for (auto& [k, x] : attrs) o->set(k, std::move(x));
      r.track_namespace(o);
      return Value::object(Kind::kNamespace, std::move(o));
    }
    auto d = std::make_shared<DictData>();
    for (auto& [k, x] : attrs) {
      Value key = Value::string(k);
      bool found = false;
      for (auto& [ek, ev] : d->entries) {
        if (equals(ek, key)) {
          ev = x;
          found = true;
        }
      }
      if (!found) d->entries.emplace_back(std::move(key), std::move(x));
    }
    return Value::dict(std::move(d));
  }
  return Status::usage(fmt::format("unknown function '{}'", name));
}

void add_builtins(Scope* globals) {
  for (std::string_view n : {"raise_exception", "strftime_now", "range", "namespace", "dict"}) {
    auto c = std::make_shared<Callable>();
    c->type = Callable::Type::kBuiltin;
    c->name = std::string(n);
    globals->set(n, Value::callable(std::move(c)));
  }
}

}  // namespace ridge::chat::jinja
