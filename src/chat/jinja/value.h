// Value: a Python object as jinja2 sees it (Undefined, None, bool, int, float, str, list/tuple,
// dict, namespace, loop, callables). Containers are immutable and shared (the HF sandbox forbids
// mutation); only a namespace is mutable, and only by {% set ns.attr = ... %}.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/status.h"
#include "chat/jinja/tstring.h"

namespace ridge::chat::jinja {

struct Value;
struct Node;
struct Scope;
using ValueList = std::vector<Value>;

struct ListData;
struct DictData;
struct Object;
struct Callable;

enum class Kind : uint8_t {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,
  kTuple,
  kDict,
  kNamespace,
  kLoop,
  kCallable,
};

struct Value {
  Kind kind = Kind::kUndefined;
  std::variant<std::monostate, bool, int64_t, double, std::shared_ptr<const TString>,
               std::shared_ptr<const ListData>, std::shared_ptr<const DictData>,
               std::shared_ptr<Object>, std::shared_ptr<const Callable>>
      p;

  static Value undefined(std::string hint = {});
  static Value none() { return Value{Kind::kNone, {}}; }
  static Value boolean(bool b) { return Value{Kind::kBool, b}; }
  static Value integer(int64_t i) { return Value{Kind::kInt, i}; }
  static Value number(double d) { return Value{Kind::kFloat, d}; }
  static Value string(TString s);
  static Value string(std::string s, bool literal = false) {
    return string(TString(std::move(s), literal));
  }
  static Value list(ValueList items, bool tuple = false);
  static Value dict(std::shared_ptr<DictData> d);
  static Value object(Kind kind, std::shared_ptr<Object> o) { return Value{kind, std::move(o)}; }
  static Value callable(std::shared_ptr<const Callable> c) { return Value{Kind::kCallable, c}; }

  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_none() const { return kind == Kind::kNone; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_int() const { return kind == Kind::kInt; }  // not bool
  bool is_numeric() const {
    return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool;
  }
  bool is_list() const { return kind == Kind::kList || kind == Kind::kTuple; }
  bool is_dict() const { return kind == Kind::kDict; }

  bool as_bool() const { return std::get<bool>(p); }
  int64_t as_int() const {
    return kind == Kind::kBool ? (as_bool() ? 1 : 0) : std::get<int64_t>(p);
  }
  double as_double() const {
    return kind == Kind::kFloat ? std::get<double>(p) : static_cast<double>(as_int());
  }
  const TString& str() const { return *std::get<std::shared_ptr<const TString>>(p); }
  const ValueList& items() const;
  const DictData& dict() const { return *std::get<std::shared_ptr<const DictData>>(p); }
  Object& obj() const { return *std::get<std::shared_ptr<Object>>(p); }
  const Callable& fn() const { return *std::get<std::shared_ptr<const Callable>>(p); }
  std::string_view undefined_hint() const;
};

// Containers record how deeply they nest (1 + their deepest child), so that values built by a
// template can be bounded (deep values would make printing and destruction recurse deeply).
struct ListData {
  ValueList items;
  int depth = 1;
};

struct DictData {
  std::vector<std::pair<Value, Value>> entries;  // insertion order, unique keys
  int depth = 1;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
};

// A namespace() (named attributes) or a loop object (the loop's items and the current index;
// loop.index, loop.last, ... are computed on access).
struct Object {
  std::vector<std::pair<std::string, Value>> attrs;
  int depth = 1;
  std::shared_ptr<const std::vector<Value>> loop_items;
  int64_t loop_index = 0;
  // kLoop: the attribute `name` (undefined if unknown).
  Value loop_attr(std::string_view name) const;
  const Value* find(std::string_view name) const;
  void set(std::string_view name, Value v);
};

struct Callable {
  enum class Type { kMacro, kBuiltin, kMethod };
  Type type = Type::kBuiltin;
  std::string name;
  const Node* macro = nullptr;   // kMacro
  std::weak_ptr<Scope> closure;  // kMacro: the scope it was defined in
  Value self;                    // kMethod: the receiver
};

// 0 for scalars, else the container's nesting depth.
int nesting_depth(const Value& v);

// Python truthiness.
bool truthy(const Value& v);
// Python ==, deep (1 == 1.0 == True; list/tuple are different types).
bool equals(const Value& a, const Value& b, int depth = 0);
// Python <: -1/0/1, or an error for unorderable types.
Result<int> compare(const Value& a, const Value& b);
// 'dict object', 'str object', ... as jinja2 names them in errors.
std::string type_name(const Value& v);
bool any_tainted(const Value& v, int depth = 0);

// JSON -> Value. Every string (and key) of `literal` data is tainted. Errors past max depth.
Result<Value> from_json(const nlohmann::ordered_json& j, bool literal, int depth = 0);
inline constexpr int kMaxDepth = 200;

}  // namespace ridge::chat::jinja
