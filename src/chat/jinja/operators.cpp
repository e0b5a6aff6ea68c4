// Attribute / item access, slicing, arithmetic and membership with Python semantics, as
// jinja2's sandboxed environment applies them.
#include <fmt/format.h>

#include <cmath>

#include "chat/jinja/evaluator.h"
#include "chat/jinja/py_format.h"
#include "chat/jinja/str_ops.h"

namespace ridge::chat::jinja {
namespace {

Value method(const Value& self, std::string_view name) {
  auto c = std::make_shared<Callable>();
  c->type = Callable::Type::kMethod;
  c->name = std::string(name);
  c->self = self;
  return Value::callable(std::move(c));
}

Value no_attr(const Value& obj, std::string_view name) {
  return Value::undefined(fmt::format("'{} object' has no attribute '{}'", type_name(obj), name));
}

Status type_error(std::string_view op, const Value& a, const Value& b) {
  return Status::usage(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op,
                                   type_name(a), type_name(b)));
}

bool mul_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }

}  // namespace

Result<Value> Renderer::get_attr(const Value& obj, std::string_view name) {
  switch (obj.kind) {
    case Kind::kUndefined: {
      std::string_view hint = obj.undefined_hint();
      return Status::usage(hint.empty() ? fmt::format("undefined has no attribute '{}'", name)
                                        : std::string(hint));
    }
    case Kind::kDict: {
      if (has_method(obj, name)) return method(obj, name);
      if (const Value* v = obj.dict().find(name)) return *v;
      return no_attr(obj, name);
    }
    case Kind::kNamespace: {
      if (const Value* v = obj.obj().find(name)) return *v;
      return no_attr(obj, name);
    }
    case Kind::kLoop:
      if (has_method(obj, name)) return method(obj, name);
      return obj.obj().loop_attr(name);
    default:
      if (has_method(obj, name)) return method(obj, name);
      return no_attr(obj, name);
  }
}

Result<Value> Renderer::get_item(const Value& obj, const Value& key) {
  switch (obj.kind) {
    case Kind::kUndefined:
      return get_attr(obj, "");
    case Kind::kDict:
      if (const Value* v = obj.dict().find(key)) return *v;
      break;
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kString:
      if (key.kind == Kind::kInt || key.kind == Kind::kBool) {
        int64_t i = key.as_int();
        if (obj.is_string()) {
          std::vector<size_t> offs = cp_offsets(obj.str().s);
          auto n = static_cast<int64_t>(offs.size() - 1);
          if (i < 0) i += n;
          if (i < 0 || i >= n) return Value::undefined("string index out of range");
          return Value::string(
              obj.str().substr(offs[static_cast<size_t>(i)], offs[static_cast<size_t>(i) + 1]));
        }
        auto n = static_cast<int64_t>(obj.items().size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined("list index out of range");
        return obj.items()[static_cast<size_t>(i)];
      }
      break;
    default:
      break;
  }
  if (key.is_string()) return get_attr(obj, key.str().s);
  return Value::undefined(fmt::format("'{} object' has no item", type_name(obj)));
}

Result<Value> slice_value(const Value& obj, const Value& start, const Value& stop,
                          const Value& step) {
  if (!obj.is_list() && !obj.is_string()) return Value::undefined("object is not sliceable");
  std::vector<size_t> offs;
  int64_t n = 0;
  if (obj.is_string()) {
    offs = cp_offsets(obj.str().s);
    n = static_cast<int64_t>(offs.size() - 1);
  } else {
    n = static_cast<int64_t>(obj.items().size());
  }
  auto index = [](const Value& v, int64_t* out) -> Status {
    if (v.is_none()) return ok_status();
    if (v.kind != Kind::kInt && v.kind != Kind::kBool) {
      return Status::usage("slice indices must be integers or None");
    }
    *out = v.as_int();
    return ok_status();
  };
  int64_t st = 1;
  RIDGE_RETURN_IF_ERROR(index(step, &st));
  if (st == 0) return Status::usage("slice step cannot be zero");
  int64_t lo = st > 0 ? 0 : n - 1, hi = st > 0 ? n : -1;
  auto adjust = [&](int64_t v, bool is_start) {
    if (v < 0) {
      v += n;
      if (v < 0) v = st < 0 ? -1 : 0;
    } else if (v >= n) {
      v = st < 0 ? n - 1 : n;
    }
    (void)is_start;
    return v;
  };
  if (!start.is_none()) {
    int64_t v = 0;
    RIDGE_RETURN_IF_ERROR(index(start, &v));
    lo = adjust(v, true);
  }
  if (!stop.is_none()) {
    int64_t v = 0;
    RIDGE_RETURN_IF_ERROR(index(stop, &v));
    hi = adjust(v, false);
  }
  std::vector<int64_t> picks;
  if (st > 0) {
    for (int64_t i = lo; i < hi; i += st) picks.push_back(i);
  } else {
    for (int64_t i = lo; i > hi; i += st) picks.push_back(i);
  }
  if (obj.is_string()) {
    const TString& s = obj.str();
    if (st == 1) {
      if (picks.empty()) return Value::string(TString());
      return Value::string(s.substr(offs[static_cast<size_t>(picks.front())],
                                    offs[static_cast<size_t>(picks.back()) + 1]));
    }
    TString out;
    for (int64_t i : picks) {
      out.append(s.substr(offs[static_cast<size_t>(i)], offs[static_cast<size_t>(i) + 1]));
    }
    return Value::string(std::move(out));
  }
  ValueList items;
  items.reserve(picks.size());
  for (int64_t i : picks) items.push_back(obj.items()[static_cast<size_t>(i)]);
  return Value::list(std::move(items), obj.kind == Kind::kTuple);
}

Result<bool> contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Kind::kUndefined:
      return false;
    case Kind::kString:
      if (!item.is_string()) {
        return Status::usage(
            fmt::format("'in <string>' requires string as left operand, not {}", type_name(item)));
      }
      return container.str().s.find(item.str().s) != std::string::npos;
    case Kind::kList:
    case Kind::kTuple:
      for (const auto& x : container.items()) {
        if (equals(x, item)) return true;
      }
      return false;
    case Kind::kDict:
      return container.dict().find(item) != nullptr;
    default:
      return Status::usage(
          fmt::format("argument of type '{}' is not iterable", type_name(container)));
  }
}

Result<Value> binary_op(std::string_view op, const Value& a, const Value& b) {
  if (a.is_numeric() && b.is_numeric()) {
    bool fl = a.kind == Kind::kFloat || b.kind == Kind::kFloat;
    double x = a.as_double(), y = b.as_double();
    int64_t i = fl ? 0 : a.as_int(), j = fl ? 0 : b.as_int(), r = 0;
    if (op == "+") {
      if (fl) return Value::number(x + y);
      if (__builtin_add_overflow(i, j, &r)) return Status::usage("integer overflow");
      return Value::integer(r);
    }
    if (op == "-") {
      if (fl) return Value::number(x - y);
      if (__builtin_sub_overflow(i, j, &r)) return Status::usage("integer overflow");
      return Value::integer(r);
    }
    if (op == "*") {
      if (fl) return Value::number(x * y);
      if (mul_overflows(i, j, &r)) return Status::usage("integer overflow");
      return Value::integer(r);
    }
    if (op == "/") {
      if (y == 0) return Status::usage("division by zero");
      return Value::number(x / y);
    }
    if (op == "//" || op == "%") {
      if (fl ? y == 0 : j == 0) {
        return Status::usage(op == "%" ? "modulo by zero" : "integer division or modulo by zero");
      }
      if (fl) {
        double m = std::fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        if (op == "%") return Value::number(m);
        return Value::number(std::floor((x - m) / y + 0.5));
      }
      if (i == INT64_MIN && j == -1) return Status::usage("integer overflow");
      int64_t q = i / j, m = i % j;
      if (m != 0 && ((m < 0) != (j < 0))) {
        m += j;
        --q;
      }
      return Value::integer(op == "%" ? m : q);
    }
    if (op == "**") {
      if (!fl && j >= 0) {
        int64_t acc = 1;
        for (int64_t k = 0; k < j; ++k) {
          if (mul_overflows(acc, i, &acc)) return Status::usage("integer overflow");
          if (acc == 0 || acc == 1) break;
        }
        return Value::integer(acc);
      }
      return Value::number(std::pow(x, y));
    }
    return type_error(op, a, b);
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      TString out = a.str();
      if (a.str().markup != b.str().markup) {  // Markup + str escapes the str
        TString l = a.str(), r = b.str();
        if (!l.markup) l = TString::derived(html_escape(l.s), l.tainted());
        if (!r.markup) r = TString::derived(html_escape(r.s), r.tainted());
        out = l;
        out.append(r);
        out.markup = true;
        return Value::string(std::move(out));
      }
      out.append(b.str());
      if (out.s.size() > kMaxOutputBytes) return Status::usage("string larger than 64 MiB");
      return Value::string(std::move(out));
    }
    if (a.is_list() && a.kind == b.kind) {
      ValueList items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(items), a.kind == Kind::kTuple);
    }
  }
  if (op == "*") {
    const Value* seq = a.is_numeric() ? &b : &a;
    const Value* cnt = a.is_numeric() ? &a : &b;
    if (cnt->kind == Kind::kInt || cnt->kind == Kind::kBool) {
      int64_t k = cnt->as_int();
      if (seq->is_string()) {
        if (k > 0 && static_cast<double>(seq->str().s.size()) * static_cast<double>(k) >
                         static_cast<double>(kMaxOutputBytes)) {
          return Status::usage("string larger than 64 MiB");
        }
        TString out;
        for (int64_t i = 0; i < k; ++i) out.append(seq->str());
        return Value::string(std::move(out));
      }
      if (seq->is_list()) {
        if (k > 0 && static_cast<double>(seq->items().size()) * static_cast<double>(k) > 1e6) {
          return Status::usage("list too large");
        }
        ValueList items;
        for (int64_t i = 0; i < k; ++i) {
          items.insert(items.end(), seq->items().begin(), seq->items().end());
        }
        return Value::list(std::move(items), seq->kind == Kind::kTuple);
      }
    }
  }
  if (op == "%" && a.is_string()) {
    return Status::usage("unsupported: printf-style string formatting with '%'");
  }
  return type_error(op, a, b);
}

}  // namespace ridge::chat::jinja
