#include "chat/jinja/value.h"

#include <fmt/format.h>

#include <algorithm>

namespace ridge::chat::jinja {

Value Value::undefined(std::string hint) {
  Value v;
  if (!hint.empty()) v.p = std::make_shared<const TString>(TString(std::move(hint)));
  return v;
}

Value Value::string(TString s) {
  return Value{Kind::kString, std::make_shared<const TString>(std::move(s))};
}

Value Value::list(ValueList items, bool tuple) {
  auto l = std::make_shared<ListData>();
  for (const auto& x : items) l->depth = std::max(l->depth, 1 + nesting_depth(x));
  l->items = std::move(items);
  return Value{tuple ? Kind::kTuple : Kind::kList, std::shared_ptr<const ListData>(std::move(l))};
}

Value Value::dict(std::shared_ptr<DictData> d) {
  for (const auto& [k, x] : d->entries) {
    d->depth = std::max({d->depth, 1 + nesting_depth(k), 1 + nesting_depth(x)});
  }
  return Value{Kind::kDict, std::shared_ptr<const DictData>(std::move(d))};
}

const ValueList& Value::items() const {
  return std::get<std::shared_ptr<const ListData>>(p)->items;
}

int nesting_depth(const Value& v) {
  switch (v.kind) {
    case Kind::kList:
    case Kind::kTuple:
      return std::get<std::shared_ptr<const ListData>>(v.p)->depth;
    case Kind::kDict:
      return v.dict().depth;
    case Kind::kNamespace:
    case Kind::kLoop:
      return v.obj().depth;
    default:
      return 0;
  }
}

std::string_view Value::undefined_hint() const {
  if (kind != Kind::kUndefined) return {};
  if (const auto* s = std::get_if<std::shared_ptr<const TString>>(&p)) return (*s)->s;
  return {};
}

const Value* DictData::find(const Value& key) const {
  for (const auto& [k, v] : entries) {
    if (equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k.is_string() && k.str().s == key) return &v;
  }
  return nullptr;
}

const Value* Object::find(std::string_view name) const {
  for (const auto& [k, v] : attrs) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value Object::loop_attr(std::string_view name) const {
  const auto n = static_cast<int64_t>(loop_items->size());
  const int64_t i = loop_index;
  if (name == "index") return Value::integer(i + 1);
  if (name == "index0") return Value::integer(i);
  if (name == "revindex") return Value::integer(n - i);
  if (name == "revindex0") return Value::integer(n - i - 1);
  if (name == "first") return Value::boolean(i == 0);
  if (name == "last") return Value::boolean(i == n - 1);
  if (name == "length") return Value::integer(n);
  if (name == "depth") return Value::integer(1);
  if (name == "depth0") return Value::integer(0);
  if (name == "previtem") {
    return i > 0 ? (*loop_items)[static_cast<size_t>(i - 1)]
                 : Value::undefined("there is no previous item");
  }
  if (name == "nextitem") {
    return i + 1 < n ? (*loop_items)[static_cast<size_t>(i + 1)]
                     : Value::undefined("there is no next item");
  }
  return Value::undefined(fmt::format("'LoopContext object' has no attribute '{}'", name));
}

void Object::set(std::string_view name, Value v) {
  for (auto& [k, old] : attrs) {
    if (k == name) {
      depth = std::max(depth, 1 + nesting_depth(v));
      old = std::move(v);
      return;
    }
  }
  depth = std::max(depth, 1 + nesting_depth(v));
  attrs.emplace_back(std::string(name), std::move(v));
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return v.as_bool();
    case Kind::kInt:
      return v.as_int() != 0;
    case Kind::kFloat:
      return v.as_double() != 0.0;
    case Kind::kString:
      return !v.str().s.empty();
    case Kind::kList:
    case Kind::kTuple:
      return !v.items().empty();
    case Kind::kDict:
      return !v.dict().entries.empty();
    default:
      return true;
  }
}

bool equals(const Value& a, const Value& b, int depth) {
  if (depth > kMaxDepth + 60) return false;  // only cyclic namespaces get here
  if (a.is_numeric() && b.is_numeric()) {
    if (a.kind != Kind::kFloat && b.kind != Kind::kFloat) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.str().s == b.str().s;
    case Kind::kList:
    case Kind::kTuple: {
      const auto& x = a.items();
      const auto& y = b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!equals(x[i], y[i], depth + 1)) return false;
      }
      return true;
    }
    case Kind::kDict: {
      const auto& x = a.dict().entries;
      if (x.size() != b.dict().entries.size()) return false;
      for (const auto& [k, v] : x) {
        const Value* o = b.dict().find(k);
        if (o == nullptr || !equals(v, *o, depth + 1)) return false;
      }
      return true;
    }
    case Kind::kNamespace:
    case Kind::kLoop:
      return &a.obj() == &b.obj();
    case Kind::kCallable:
      return &a.fn() == &b.fn();
    default:
      return false;
  }
}

Result<int> compare(const Value& a, const Value& b) {
  if (a.is_numeric() && b.is_numeric()) {
    if (a.kind != Kind::kFloat && b.kind != Kind::kFloat) {
      return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
    }
    double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    int c = a.str().s.compare(b.str().s);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && a.kind == b.kind) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return Status::usage(fmt::format("'<' not supported between instances of '{}' and '{}'",
                                   type_name(a), type_name(b)));
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "Namespace";
    case Kind::kLoop:
      return "LoopContext";
    case Kind::kCallable:
      return v.fn().type == Callable::Type::kMacro ? "Macro" : "function";
  }
  return "object";
}

bool any_tainted(const Value& v, int depth) {
  if (depth > kMaxDepth) return true;
  switch (v.kind) {
    case Kind::kString:
      return v.str().tainted();
    case Kind::kList:
    case Kind::kTuple:
      for (const auto& x : v.items()) {
        if (any_tainted(x, depth + 1)) return true;
      }
      return false;
    case Kind::kDict:
      for (const auto& [k, x] : v.dict().entries) {
        if (any_tainted(k, depth + 1) || any_tainted(x, depth + 1)) return true;
      }
      return false;
    case Kind::kLoop:
      return false;
    case Kind::kNamespace:
      for (const auto& [k, x] : v.obj().attrs) {
        if (any_tainted(x, depth + 1)) return true;
      }
      return false;
    default:
      return false;
  }
}

Result<Value> from_json(const nlohmann::ordered_json& j, bool literal, int depth) {
  if (depth > kMaxDepth) {
    return Status::usage(fmt::format("chat template input nested deeper than {}", kMaxDepth));
  }
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value::number(j.get<double>());
    case nlohmann::json::value_t::string:
      return Value::string(j.get_ref<const std::string&>(), literal);
    case nlohmann::json::value_t::array: {
      ValueList items;
      items.reserve(j.size());
      for (const auto& x : j) {
        RIDGE_ASSIGN_OR_RETURN(Value v, from_json(x, literal, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      auto d = std::make_shared<DictData>();
      d->entries.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        RIDGE_ASSIGN_OR_RETURN(Value v, from_json(it.value(), literal, depth + 1));
        d->entries.emplace_back(Value::string(it.key(), literal), std::move(v));
      }
      return Value::dict(std::move(d));
    }
    default:
      return Status::usage("chat template input: unsupported JSON value (binary)");
  }
}

}  // namespace ridge::chat::jinja
