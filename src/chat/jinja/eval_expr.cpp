// Expression evaluation and calls (macros, builtins, methods).
#include <fmt/format.h>

#include "chat/jinja/evaluator.h"
#include "chat/jinja/lexer.h"
#include "chat/jinja/py_format.h"

namespace ridge::chat::jinja {

namespace {

struct DepthGuard {
  int* d;
  explicit DepthGuard(int* depth) : d(depth) { ++*d; }
  ~DepthGuard() { --*d; }
};

Status undefined_error(const Value& v) {
  std::string_view hint = v.undefined_hint();
  return Status::usage(hint.empty() ? std::string("value is undefined") : std::string(hint));
}

}  // namespace

Result<Value> Renderer::eval(const Expr& e, const ScopePtr& scope) {
  DepthGuard g(&depth_);
  if (depth_ > 4 * kMaxCallDepth + 200) return template_error(e.line, "recursion too deep");
  auto r = eval_inner(e, scope);
  if (!r.ok()) return with_line(e.line, r.status());
  if (nesting_depth(*r) > kMaxDepth + 50) {
    return template_error(e.line, fmt::format("value nested deeper than {}", kMaxDepth + 50));
  }
  return r;
}

Result<Value> Renderer::eval_inner(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case ExprKind::kConst:
      return e.value;
    case ExprKind::kName: {
      const Value* v = scope->find(e.name);
      if (v != nullptr) return *v;
      return Value::undefined(fmt::format("'{}' is undefined", e.name));
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      ValueList items;
      for (const auto& a : e.args) {
        RIDGE_ASSIGN_OR_RETURN(Value v, eval(*a, scope));
        items.push_back(std::move(v));
      }
      return Value::list(std::move(items), e.kind == ExprKind::kTuple);
    }
    case ExprKind::kDict: {
      auto d = std::make_shared<DictData>();
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        RIDGE_ASSIGN_OR_RETURN(Value k, eval(*e.args[i], scope));
        RIDGE_ASSIGN_OR_RETURN(Value v, eval(*e.args[i + 1], scope));
        bool found = false;
        for (auto& [ok, ov] : d->entries) {
          if (equals(ok, k)) {
            ov = v;
            found = true;
          }
        }
        if (!found) d->entries.emplace_back(std::move(k), std::move(v));
      }
      return Value::dict(std::move(d));
    }
    case ExprKind::kAttr: {
      RIDGE_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0], scope));
      return get_attr(obj, e.name);
    }
    case ExprKind::kItem: {
      RIDGE_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0], scope));
      RIDGE_ASSIGN_OR_RETURN(Value key, eval(*e.args[1], scope));
      return get_item(obj, key);
    }
    case ExprKind::kSlice: {
      RIDGE_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0], scope));
      Value parts[3] = {Value::none(), Value::none(), Value::none()};
      for (int i = 0; i < 3; ++i) {
        if (e.args[static_cast<size_t>(i) + 1]) {
          RIDGE_ASSIGN_OR_RETURN(parts[i], eval(*e.args[static_cast<size_t>(i) + 1], scope));
        }
      }
      if (obj.is_undefined()) return undefined_error(obj);
      return slice_value(obj, parts[0], parts[1], parts[2]);
    }
    case ExprKind::kCall:
      return eval_call(e, scope, nullptr);
    case ExprKind::kFilter: {
      RIDGE_ASSIGN_OR_RETURN(Value input, eval(*e.args[0], scope));
      return eval_filter_chain(e, scope, input);
    }
    case ExprKind::kTest: {
      RIDGE_ASSIGN_OR_RETURN(Value input, eval(*e.args[0], scope));
      RIDGE_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, scope));
      RIDGE_ASSIGN_OR_RETURN(bool b, apply_test(*this, e.fn_id, input, args));
      return Value::boolean(b != e.negated);
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      RIDGE_ASSIGN_OR_RETURN(Value x, eval(*e.args[0], scope));
      if (!x.is_numeric()) {
        return Status::usage(fmt::format("bad operand type for unary {}: '{}'",
                                         e.kind == ExprKind::kNeg ? "-" : "+", type_name(x)));
      }
      if (e.kind == ExprKind::kPos) {
        return x.kind == Kind::kBool ? Value::integer(x.as_int()) : x;
      }
      if (x.kind == Kind::kFloat) return Value::number(-x.as_double());
      if (x.as_int() == INT64_MIN) return Status::usage("integer overflow");
      return Value::integer(-x.as_int());
    }
    case ExprKind::kNot: {
      RIDGE_ASSIGN_OR_RETURN(Value x, eval(*e.args[0], scope));
      return Value::boolean(!truthy(x));
    }
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      RIDGE_ASSIGN_OR_RETURN(Value l, eval(*e.args[0], scope));
      bool t = truthy(l);
      if ((e.kind == ExprKind::kAnd) ? !t : t) return l;
      return eval(*e.args[1], scope);
    }
    case ExprKind::kBinary: {
      RIDGE_ASSIGN_OR_RETURN(Value l, eval(*e.args[0], scope));
      RIDGE_ASSIGN_OR_RETURN(Value r, eval(*e.args[1], scope));
      if (e.name == "~") {
        RIDGE_ASSIGN_OR_RETURN(TString a, py_str(l));
        RIDGE_ASSIGN_OR_RETURN(TString b, py_str(r));
        a.markup = false;
        a.append(b);
        if (a.s.size() > kMaxOutputBytes) return Status::usage("string larger than 64 MiB");
        return Value::string(std::move(a));
      }
      if (l.is_undefined()) return undefined_error(l);
      if (r.is_undefined()) return undefined_error(r);
      return binary_op(e.name, l, r);
    }
    case ExprKind::kCompare:
      return eval_compare(e, scope);
    case ExprKind::kCond: {
      RIDGE_ASSIGN_OR_RETURN(Value c, eval(*e.args[1], scope));
      if (truthy(c)) return eval(*e.args[0], scope);
      if (e.args[2]) return eval(*e.args[2], scope);
      return Value::undefined("the inline if-expression evaluated to false and no else section");
    }
  }
  return Value::undefined();
}

Result<Value> Renderer::eval_compare(const Expr& e, const ScopePtr& scope) {
  RIDGE_ASSIGN_OR_RETURN(Value left, eval(*e.args[0], scope));
  for (size_t i = 0; i < e.ops.size(); ++i) {
    RIDGE_ASSIGN_OR_RETURN(Value right, eval(*e.args[i + 1], scope));
    const std::string& op = e.ops[i];
    bool r = false;
    if (op == "==") {
      r = equals(left, right);
    } else if (op == "!=") {
      r = !equals(left, right);
    } else if (op == "in" || op == "not in") {
      RIDGE_ASSIGN_OR_RETURN(bool in, contains(right, left));
      r = (op == "in") == in;
    } else {
      if (left.is_undefined()) return undefined_error(left);
      if (right.is_undefined()) return undefined_error(right);
      auto c = compare(left, right);
      if (!c.ok()) {
        return Status::usage(fmt::format("'{}' not supported between instances of '{}' and '{}'",
                                         op, type_name(left), type_name(right)));
      }
      r = op == "<" ? *c < 0 : op == "<=" ? *c <= 0 : op == ">" ? *c > 0 : *c >= 0;
    }
    if (!r) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Result<CallArgs> Renderer::eval_args(const Expr& e, const ScopePtr& scope) {
  CallArgs args;
  for (size_t i = 1; i < e.args.size(); ++i) {
    RIDGE_ASSIGN_OR_RETURN(Value v, eval(*e.args[i], scope));
    args.pos.push_back(std::move(v));
  }
  for (const auto& [k, x] : e.kwargs) {
    RIDGE_ASSIGN_OR_RETURN(Value v, eval(*x, scope));
    args.kw.emplace_back(k, std::move(v));
  }
  return args;
}

Result<Value> Renderer::eval_filter_chain(const Expr& e, const ScopePtr& scope,
                                          const Value& input) {
  Value in = input;
  // In a filter block or block set the innermost filter has no input expression: the whole
  // chain applies to `input`. Otherwise the caller evaluated e.args[0] into `input`.
  auto block_chain = [](const Expr* x) {
    while (x != nullptr && x->kind == ExprKind::kFilter) x = x->args[0].get();
    return x == nullptr;
  };
  if (e.args[0] && block_chain(e.args[0].get())) {
    RIDGE_ASSIGN_OR_RETURN(in, eval_filter_chain(*e.args[0], scope, input));
  }
  RIDGE_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, scope));
  return apply_filter(*this, e.fn_id, in, args);
}

Result<Value> Renderer::eval_call(const Expr& e, const ScopePtr& scope, const Value* caller) {
  RIDGE_ASSIGN_OR_RETURN(Value fn, eval(*e.args[0], scope));
  RIDGE_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, scope));
  if (caller != nullptr) args.kw.emplace_back("caller", *caller);
  return call(fn, args);
}

Result<Value> Renderer::call(const Value& fn, const CallArgs& args) {
  if (fn.is_undefined()) return undefined_error(fn);
  if (fn.kind != Kind::kCallable) {
    return Status::usage(fmt::format("'{}' object is not callable", type_name(fn)));
  }
  const Callable& c = fn.fn();
  switch (c.type) {
    case Callable::Type::kMacro:
      return call_macro(c, args);
    case Callable::Type::kBuiltin:
      return call_builtin(*this, c.name, args);
    case Callable::Type::kMethod:
      return call_method(*this, c.self, c.name, args);
  }
  return Value::undefined();
}

Result<Value> Renderer::call_macro(const Callable& m, const CallArgs& args) {
  DepthGuard g(&depth_);
  if (depth_ > 4 * kMaxCallDepth) return Status::usage("macro recursion too deep");
  RIDGE_RETURN_IF_ERROR(count_iterations(1));
  ScopePtr closure = m.closure.lock();
  if (!closure) return Status::usage(fmt::format("macro '{}' outlived its scope", m.name));
  const Node& n = *m.macro;
  auto s = std::make_shared<Scope>();
  s->parent = closure;
  if (args.pos.size() > n.params.size()) {
    return Status::usage(
        fmt::format("macro '{}' takes not more than {} argument(s)", m.name, n.params.size()));
  }
  for (const auto& [k, v] : args.kw) {
    bool known = k == "caller" && n.kind == NodeKind::kMacro;
    for (size_t i = 0; i < n.params.size(); ++i) {
      if (n.params[i] != k) continue;
      if (i < args.pos.size()) {
        return Status::usage(
            fmt::format("macro '{}' got multiple values for argument '{}'", m.name, k));
      }
      known = true;
    }
    if (!known) {
      return Status::usage(fmt::format("macro '{}' takes no keyword argument '{}'", m.name, k));
    }
  }
  for (size_t i = 0; i < n.params.size(); ++i) {
    const Value* v = i < args.pos.size() ? &args.pos[i] : args.get(SIZE_MAX, n.params[i]);
    if (v != nullptr) {
      s->set(n.params[i], *v);
    } else if (n.defaults[i]) {
      RIDGE_ASSIGN_OR_RETURN(Value d, eval(*n.defaults[i], s));
      s->set(n.params[i], std::move(d));
    } else {
      s->set(n.params[i],
             Value::undefined(fmt::format("parameter '{}' was not provided", n.params[i])));
    }
  }
  if (const Value* c = args.get(SIZE_MAX, "caller"); c != nullptr && n.kind == NodeKind::kMacro) {
    s->set("caller", *c);
  }
  TString out;
  Flow saved = flow_;
  flow_ = Flow::kNormal;
  RIDGE_RETURN_IF_ERROR(exec(n.body, s, &out));
  flow_ = saved;
  return Value::string(std::move(out));
}

}  // namespace ridge::chat::jinja
