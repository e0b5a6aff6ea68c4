// Tests ("x is defined", "x is not none", ...), with jinja2 3.1 semantics.
#include <fmt/format.h>

#include <algorithm>

#include "chat/jinja/evaluator.h"
#include "chat/jinja/filters.h"
#include "chat/jinja/py_format.h"
#include "chat/jinja/str_ops.h"

namespace ridge::chat::jinja {
namespace {

using TestFn = Result<bool> (*)(Renderer&, const Value&, const CallArgs&);

Result<const Value*> arg0(const CallArgs& a, std::string_view test) {
  const Value* v = a.get(0, "other");
  if (v == nullptr) return Status::usage(fmt::format("test '{}' needs an argument", test));
  return v;
}

template <int kOp>  // 0 ==, 1 !=, 2 <, 3 <=, 4 >, 5 >=
Result<bool> t_cmp(Renderer&, const Value& v, const CallArgs& a) {
  RIDGE_ASSIGN_OR_RETURN(const Value* o, arg0(a, "comparison"));
  if (kOp == 0) return equals(v, *o);
  if (kOp == 1) return !equals(v, *o);
  RIDGE_ASSIGN_OR_RETURN(int c, compare(v, *o));
  return kOp == 2 ? c < 0 : kOp == 3 ? c <= 0 : kOp == 4 ? c > 0 : c >= 0;
}

Result<bool> t_defined(Renderer&, const Value& v, const CallArgs&) { return !v.is_undefined(); }
Result<bool> t_undefined(Renderer&, const Value& v, const CallArgs&) { return v.is_undefined(); }
Result<bool> t_none(Renderer&, const Value& v, const CallArgs&) { return v.is_none(); }
Result<bool> t_boolean(Renderer&, const Value& v, const CallArgs&) { return v.kind == Kind::kBool; }
Result<bool> t_true(Renderer&, const Value& v, const CallArgs&) {
  return v.kind == Kind::kBool && v.as_bool();
}
Result<bool> t_false(Renderer&, const Value& v, const CallArgs&) {
  return v.kind == Kind::kBool && !v.as_bool();
}
Result<bool> t_integer(Renderer&, const Value& v, const CallArgs&) { return v.is_int(); }
Result<bool> t_float(Renderer&, const Value& v, const CallArgs&) { return v.kind == Kind::kFloat; }
Result<bool> t_number(Renderer&, const Value& v, const CallArgs&) { return v.is_numeric(); }
Result<bool> t_string(Renderer&, const Value& v, const CallArgs&) { return v.is_string(); }
Result<bool> t_mapping(Renderer&, const Value& v, const CallArgs&) { return v.is_dict(); }
Result<bool> t_iterable(Renderer&, const Value& v, const CallArgs&) {
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
}
Result<bool> t_sequence(Renderer&, const Value& v, const CallArgs&) {
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
}
Result<bool> t_callable(Renderer&, const Value& v, const CallArgs&) {
  return v.kind == Kind::kCallable;
}
Result<bool> t_sameas(Renderer&, const Value& v, const CallArgs& a) {
  RIDGE_ASSIGN_OR_RETURN(const Value* o, arg0(a, "sameas"));
  if (v.kind != o->kind) return false;
  switch (v.kind) {
    case Kind::kNone:
    case Kind::kUndefined:
      return true;
    case Kind::kBool:
      return v.as_bool() == o->as_bool();
    case Kind::kInt:
      return v.as_int() == o->as_int() && v.as_int() >= -5 && v.as_int() <= 256;
    default:
      return v.p == o->p;
  }
}
Result<bool> t_in(Renderer&, const Value& v, const CallArgs& a) {
  const Value* seq = a.get(0, "seq");
  if (seq == nullptr) return Status::usage("test 'in' needs an argument");
  return contains(*seq, v);
}
Result<bool> t_odd(Renderer&, const Value& v, const CallArgs&) {
  if (!v.is_numeric() || v.kind == Kind::kFloat) return Status::usage("odd: expected an integer");
  return v.as_int() % 2 != 0;
}
Result<bool> t_even(Renderer&, const Value& v, const CallArgs&) {
  if (!v.is_numeric() || v.kind == Kind::kFloat) return Status::usage("even: expected an integer");
  return v.as_int() % 2 == 0;
}
Result<bool> t_divisibleby(Renderer&, const Value& v, const CallArgs& a) {
  const Value* n = a.get(0, "num");
  if (n == nullptr || !v.is_numeric() || !n->is_numeric()) {
    return Status::usage("divisibleby: expected numbers");
  }
  RIDGE_ASSIGN_OR_RETURN(Value m, binary_op("%", v, *n));
  return !truthy(m);
}
Result<bool> t_lower(Renderer&, const Value& v, const CallArgs&) {
  RIDGE_ASSIGN_OR_RETURN(TString s, py_str(v));
  return py_is_cased_lower(s.s);
}
Result<bool> t_upper(Renderer&, const Value& v, const CallArgs&) {
  RIDGE_ASSIGN_OR_RETURN(TString s, py_str(v));
  return py_is_cased_upper(s.s);
}
Result<bool> t_escaped(Renderer&, const Value& v, const CallArgs&) {
  return v.is_string() && v.str().markup;
}
Result<bool> t_filter(Renderer&, const Value& v, const CallArgs&) {
  return v.is_string() && find_filter(v.str().s) >= 0;
}
Result<bool> t_test(Renderer&, const Value& v, const CallArgs&) {
  return v.is_string() && find_test(v.str().s) >= 0;
}

struct TestEntry {
  std::string_view name;
  TestFn fn;
};

constexpr TestEntry kTests[] = {
    {"defined", t_defined},
    {"undefined", t_undefined},
    {"none", t_none},
    {"boolean", t_boolean},
    {"true", t_true},
    {"false", t_false},
    {"integer", t_integer},
    {"float", t_float},
    {"number", t_number},
    {"string", t_string},
    {"mapping", t_mapping},
    {"iterable", t_iterable},
    {"sequence", t_sequence},
    {"callable", t_callable},
    {"sameas", t_sameas},
    {"eq", t_cmp<0>},
    {"equalto", t_cmp<0>},
    {"==", t_cmp<0>},
    {"ne", t_cmp<1>},
    {"!=", t_cmp<1>},
    {"lt", t_cmp<2>},
    {"lessthan", t_cmp<2>},
    {"<", t_cmp<2>},
    {"le", t_cmp<3>},
    {"<=", t_cmp<3>},
    {"gt", t_cmp<4>},
    {"greaterthan", t_cmp<4>},
    {">", t_cmp<4>},
    {"ge", t_cmp<5>},
    {">=", t_cmp<5>},
    {"in", t_in},
    {"odd", t_odd},
    {"even", t_even},
    {"divisibleby", t_divisibleby},
    {"lower", t_lower},
    {"upper", t_upper},
    {"escaped", t_escaped},
    {"filter", t_filter},
    {"test", t_test},
};

}  // namespace

int find_test(std::string_view name) {
  for (size_t i = 0; i < std::size(kTests); ++i) {
    if (kTests[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

Result<bool> apply_test(Renderer& r, int id, const Value& input, const CallArgs& args) {
  if (id < 0 || static_cast<size_t>(id) >= std::size(kTests)) return Status::usage("unknown test");
  return kTests[id].fn(r, input, args);
}

Result<bool> apply_test_named(Renderer& r, std::string_view name, const Value& input,
                              const CallArgs& args) {
  int id = find_test(name);
  if (id < 0) return Status::usage(fmt::format("no test named '{}'", name));
  return apply_test(r, id, input, args);
}

}  // namespace ridge::chat::jinja
