// Statement execution: output, if, for (loop objects, scopes), set, macros, call blocks.
#include "chat/jinja/evaluator.h"

#include <fmt/format.h>

#include "chat/jinja/lexer.h"
#include "chat/jinja/py_format.h"

namespace ridge::chat::jinja {

const Value* Scope::find(std::string_view name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent.get()) {
    for (const auto& [k, v] : s->vars) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Scope::set(std::string_view name, Value v) {
  for (auto& [k, old] : vars) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  vars.emplace_back(std::string(name), std::move(v));
}

Renderer::~Renderer() {
  for (auto& ns : namespaces_) ns->attrs.clear();
}

Status Renderer::with_line(int line, Status s) const {
  if (s.ok() || raised_ || s.message().rfind("chat template line", 0) == 0) return s;
  return template_error(line, s.message());
}

Status Renderer::raise(std::string msg) {
  raised_ = true;
  return Status::usage(std::move(msg));
}

Status Renderer::count_iterations(int64_t n) {
  iterations_ += n;
  if (iterations_ > kMaxIterations) {
    return Status::usage(fmt::format("more than {} loop iterations", kMaxIterations));
  }
  return ok_status();
}

Status Renderer::exec(const NodeList& nodes, const ScopePtr& scope, TString* out) {
  for (const auto& n : nodes) {
    RIDGE_RETURN_IF_ERROR(exec_node(*n, scope, out));
    if (out->s.size() > kMaxOutputBytes) {
      return template_error(n->line, "output larger than 64 MiB");
    }
    if (flow_ != Flow::kNormal) return ok_status();
  }
  return ok_status();
}

Status Renderer::exec_node(const Node& n, const ScopePtr& scope, TString* out) {
  switch (n.kind) {
    case NodeKind::kText:
      out->append_plain(n.text);
      return ok_status();
    case NodeKind::kPrint: {
      RIDGE_ASSIGN_OR_RETURN(Value v, eval(*n.expr, scope));
      auto s = py_str(v);
      if (!s.ok()) return with_line(n.line, s.status());
      out->append(*s);
      return ok_status();
    }
    case NodeKind::kIf:
      for (const auto& [cond, body] : n.branches) {
        if (cond) {
          RIDGE_ASSIGN_OR_RETURN(Value c, eval(*cond, scope));
          if (!truthy(c)) continue;
        }
        return exec(body, scope, out);
      }
      return ok_status();
    case NodeKind::kFor:
      return exec_for(n, scope, out);
    case NodeKind::kSet: {
      RIDGE_ASSIGN_OR_RETURN(Value v, eval(*n.expr, scope));
      return exec_set(n, scope, std::move(v));
    }
    case NodeKind::kSetBlock:
    case NodeKind::kFilterBlock: {
      TString buf;
      RIDGE_RETURN_IF_ERROR(exec(n.body, scope, &buf));
      Value v = Value::string(std::move(buf));
      if (n.expr) {
        RIDGE_ASSIGN_OR_RETURN(v, eval_filter_chain(*n.expr, scope, v));
      }
      if (n.kind == NodeKind::kSetBlock) return exec_set(n, scope, std::move(v));
      auto s = py_str(v);
      if (!s.ok()) return with_line(n.line, s.status());
      out->append(*s);
      return ok_status();
    }
    case NodeKind::kMacro: {
      auto c = std::make_shared<Callable>();
      c->type = Callable::Type::kMacro;
      c->name = n.text;
      c->macro = &n;
      c->closure = scope;
      scope->set(n.text, Value::callable(std::move(c)));
      return ok_status();
    }
    case NodeKind::kCallBlock: {
      auto c = std::make_shared<Callable>();
      c->type = Callable::Type::kMacro;
      c->name = "caller";
      c->macro = &n;
      c->closure = scope;
      Value caller = Value::callable(std::move(c));
      RIDGE_ASSIGN_OR_RETURN(Value v, eval_call(*n.expr, scope, &caller));
      auto s = py_str(v);
      if (!s.ok()) return with_line(n.line, s.status());
      out->append(*s);
      return ok_status();
    }
    case NodeKind::kBreak:
      flow_ = Flow::kBreak;
      return ok_status();
    case NodeKind::kContinue:
      flow_ = Flow::kContinue;
      return ok_status();
    case NodeKind::kScope:
      return exec(n.body, scope, out);
  }
  return ok_status();
}

Status Renderer::exec_set(const Node& n, const ScopePtr& scope, Value v) {
  if (!n.attr.empty()) {
    const Value* ns = scope->find(n.targets[0]);
    if (ns == nullptr || ns->kind != Kind::kNamespace) {
      return template_error(n.line, "cannot assign attribute on non-namespace object");
    }
    ns->obj().set(n.attr, std::move(v));
    return ok_status();
  }
  if (!n.unpack) {
    scope->set(n.targets[0], std::move(v));
    return ok_status();
  }
  auto items = iterate(v);
  if (!items.ok()) return with_line(n.line, items.status());
  if (items->size() != n.targets.size()) {
    return template_error(n.line, fmt::format("cannot unpack {} values into {} names",
                                              items->size(), n.targets.size()));
  }
  for (size_t i = 0; i < items->size(); ++i) scope->set(n.targets[i], (*items)[i]);
  return ok_status();
}

Status Renderer::exec_for(const Node& n, const ScopePtr& scope, TString* out) {
  RIDGE_ASSIGN_OR_RETURN(Value seq, eval(*n.expr, scope));
  auto all = iterate(seq);
  if (!all.ok()) return with_line(n.line, all.status());
  auto bind = [&](const ScopePtr& s, const Value& item) -> Status {
    if (!n.unpack) {
      s->set(n.targets[0], item);
      return ok_status();
    }
    auto parts = iterate(item);
    if (!parts.ok()) return with_line(n.line, parts.status());
    if (parts->size() != n.targets.size()) {
      return template_error(n.line, fmt::format("cannot unpack {} values into {} names",
                                                parts->size(), n.targets.size()));
    }
    for (size_t i = 0; i < parts->size(); ++i) s->set(n.targets[i], (*parts)[i]);
    return ok_status();
  };
  std::vector<Value> items;
  if (n.cond) {
    for (const auto& item : *all) {
      RIDGE_RETURN_IF_ERROR(count_iterations(1));
      auto s = std::make_shared<Scope>();
      s->parent = scope;
      RIDGE_RETURN_IF_ERROR(bind(s, item));
      RIDGE_ASSIGN_OR_RETURN(Value c, eval(*n.cond, s));
      if (truthy(c)) items.push_back(item);
    }
  } else {
    items = std::move(*all);
  }
  if (items.empty()) {
    auto s = std::make_shared<Scope>();
    s->parent = scope;
    return exec(n.else_body, s, out);
  }
  const auto len = static_cast<int64_t>(items.size());
  auto shared_items = std::make_shared<const std::vector<Value>>(std::move(items));
  for (int64_t i = 0; i < len; ++i) {
    RIDGE_RETURN_IF_ERROR(count_iterations(1));
    auto s = std::make_shared<Scope>();
    s->parent = scope;
    s->vars.reserve(n.targets.size() + 1);
    RIDGE_RETURN_IF_ERROR(bind(s, (*shared_items)[static_cast<size_t>(i)]));
    auto loop = std::make_shared<Object>();
    loop->loop_items = shared_items;
    loop->loop_index = i;
    s->set("loop", Value::object(Kind::kLoop, std::move(loop)));
    RIDGE_RETURN_IF_ERROR(exec(n.body, s, out));
    if (flow_ == Flow::kBreak) {
      flow_ = Flow::kNormal;
      break;
    }
    flow_ = Flow::kNormal;
  }
  return ok_status();
}

Result<std::vector<Value>> Renderer::iterate(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
      return std::vector<Value>{};
    case Kind::kList:
    case Kind::kTuple:
      return v.items();
    case Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(v.dict().entries.size());
      for (const auto& [k, x] : v.dict().entries) keys.push_back(k);
      return keys;
    }
    case Kind::kString: {
      const TString& s = v.str();
      std::vector<size_t> offs = cp_offsets(s.s);
      std::vector<Value> chars;
      chars.reserve(offs.size() - 1);
      for (size_t i = 0; i + 1 < offs.size(); ++i) {
        chars.push_back(Value::string(s.substr(offs[i], offs[i + 1])));
      }
      return chars;
    }
    default:
      return Status::usage(fmt::format("'{}' object is not iterable", type_name(v)));
  }
}

}  // namespace ridge::chat::jinja
