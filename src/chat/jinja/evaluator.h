// Renderer: executes a TemplateAst. One Renderer per render() call (no shared mutable state).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat/jinja/ast.h"
#include "chat/jinja/filters.h"
#include "chat/jinja/value.h"

namespace ridge::chat::jinja {

// Variables of one jinja2 frame; lookups walk outwards (a for-loop iteration and a macro call
// open a new scope; if blocks do not).
struct Scope {
  std::vector<std::pair<std::string, Value>> vars;
  std::shared_ptr<Scope> parent;
  const Value* find(std::string_view name) const;
  void set(std::string_view name, Value v);
};
using ScopePtr = std::shared_ptr<Scope>;

inline constexpr size_t kMaxOutputBytes = size_t{64} << 20;
inline constexpr int64_t kMaxIterations = 5'000'000;
inline constexpr int kMaxCallDepth = 100;

class Renderer {
 public:
  explicit Renderer(int64_t now_unix) : now_unix_(now_unix) {}
  // Clears the namespaces this render created: a namespace holding itself would leak otherwise.
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;
  void track_namespace(std::shared_ptr<Object> ns) { namespaces_.push_back(std::move(ns)); }

  Status exec(const NodeList& nodes, const ScopePtr& scope, TString* out);
  Result<Value> eval(const Expr& e, const ScopePtr& scope);
  Result<Value> call(const Value& fn, const CallArgs& args);
  Result<Value> get_attr(const Value& obj, std::string_view name);
  Result<Value> get_item(const Value& obj, const Value& key);
  Result<std::vector<Value>> iterate(const Value& v);  // for loops, list(), join, ...
  Status count_iterations(int64_t n);
  Status raise(std::string msg);  // raise_exception(): the message is kept verbatim
  bool raised() const { return raised_; }
  int64_t now_unix() const { return now_unix_; }

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  Status exec_node(const Node& n, const ScopePtr& scope, TString* out);
  Status exec_for(const Node& n, const ScopePtr& scope, TString* out);
  Status exec_set(const Node& n, const ScopePtr& scope, Value v);
  Result<Value> eval_inner(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_call(const Expr& e, const ScopePtr& scope, const Value* caller);
  // e.args[1..] and e.kwargs evaluated: the arguments of a call, filter or test.
  Result<CallArgs> eval_args(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_filter_chain(const Expr& e, const ScopePtr& scope, const Value& input);
  Result<Value> eval_compare(const Expr& e, const ScopePtr& scope);
  Result<Value> call_macro(const Callable& m, const CallArgs& args);
  Status with_line(int line, Status s) const;

  int64_t now_unix_;
  int64_t iterations_ = 0;
  int depth_ = 0;
  bool raised_ = false;
  std::vector<std::shared_ptr<Object>> namespaces_;
  Flow flow_ = Flow::kNormal;
};

// Arithmetic and membership with Python semantics (operators.cpp).
Result<Value> binary_op(std::string_view op, const Value& a, const Value& b);
Result<bool> contains(const Value& container, const Value& item);
Result<Value> slice_value(const Value& obj, const Value& start, const Value& stop,
                          const Value& step);

// Methods of str, dict, list and loop objects (methods.cpp). has_method: whether `name` is an
// attribute that jinja2's immutable sandbox lets a template reach.
bool has_method(const Value& self, std::string_view name);
Result<Value> call_method(Renderer& r, const Value& self, std::string_view name,
                          const CallArgs& args);
// Globals: range, namespace, dict, raise_exception, strftime_now.
Result<Value> call_builtin(Renderer& r, std::string_view name, const CallArgs& args);
void add_builtins(Scope* globals);

}  // namespace ridge::chat::jinja
