// Expression grammar, following jinja2's parser: condexpr > or > and > not > compare > + - >
// ~ > * / // % > ** > unary - + > primary with postfix (. [] ()) and filters / tests.
#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "chat/jinja/filters.h"
#include "chat/jinja/parser.h"

namespace ridge::chat::jinja {
namespace {

constexpr int kMaxExprDepth = 100;

struct DepthGuard {
  int* d;
  explicit DepthGuard(int* depth) : d(depth) { ++*d; }
  ~DepthGuard() { --*d; }
};


}  // namespace

Status ExprParser::error(std::string_view msg) const { return template_error(cur().line, msg); }

Status ExprParser::expect_op(std::string_view op) {
  if (!is_op(op)) return error(fmt::format("expected '{}', got {}", op, describe_token(cur())));
  advance();
  return ok_status();
}

Result<std::string> ExprParser::expect_name() {
  if (cur().type != Token::Type::kName) {
    return error(fmt::format("expected a name, got {}", describe_token(cur())));
  }
  std::string n = cur().text;
  advance();
  return n;
}

ExprPtr ExprParser::make(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

Result<ExprPtr> ExprParser::parse_tuple(bool with_condexpr, bool explicit_parens,
                                        std::string_view extra_end) {
  int line = cur().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) RIDGE_RETURN_IF_ERROR(expect_op(","));
    if (at_end() || is_op(")") || (!extra_end.empty() && is_name(extra_end))) break;
    RIDGE_ASSIGN_OR_RETURN(ExprPtr e, parse_expression(with_condexpr));
    items.push_back(std::move(e));
    if (is_op(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parens)
      return error(fmt::format("expected an expression, got {}", describe_token(cur())));
  }
  ExprPtr t = make(ExprKind::kTuple, line);
  t->args = std::move(items);
  return t;
}

Result<ExprPtr> ExprParser::parse_expression(bool with_condexpr) {
  DepthGuard g(&depth_);
  if (depth_ > kMaxExprDepth) return error("expression nested too deeply");
  if (with_condexpr) return parse_condexpr();
  return parse_or();
}

Result<ExprPtr> ExprParser::parse_condexpr() {
  RIDGE_ASSIGN_OR_RETURN(ExprPtr e, parse_or());
  while (is_name("if")) {
    int line = cur().line;
    advance();
    RIDGE_ASSIGN_OR_RETURN(ExprPtr cond, parse_or());
    ExprPtr other;
    if (is_name("else")) {
      advance();
      DepthGuard g(&depth_);
      if (depth_ > kMaxExprDepth) return error("expression nested too deeply");
      RIDGE_ASSIGN_OR_RETURN(other, parse_condexpr());
    }
    ExprPtr c = make(ExprKind::kCond, line);
    c->args.push_back(std::move(e));
    c->args.push_back(std::move(cond));
    c->args.push_back(std::move(other));
    e = std::move(c);
  }
  return e;
}

Result<ExprPtr> ExprParser::parse_or() {
  RIDGE_ASSIGN_OR_RETURN(ExprPtr l, parse_and());
  while (is_name("or")) {
    int line = cur().line;
    advance();
    RIDGE_ASSIGN_OR_RETURN(ExprPtr r, parse_and());
    ExprPtr n = make(ExprKind::kOr, line);
    n->args.push_back(std::move(l));
    n->args.push_back(std::move(r));
    l = std::move(n);
  }
  return l;
}

Result<ExprPtr> ExprParser::parse_and() {
  RIDGE_ASSIGN_OR_RETURN(ExprPtr l, parse_not());
  while (is_name("and")) {
    int line = cur().line;
    advance();
    RIDGE_ASSIGN_OR_RETURN(ExprPtr r, parse_not());
    ExprPtr n = make(ExprKind::kAnd, line);
    n->args.push_back(std::move(l));
    n->args.push_back(std::move(r));
    l = std::move(n);
  }
  return l;
}

Result<ExprPtr> ExprParser::parse_not() {
  if (is_name("not")) {
    int line = cur().line;
    advance();
    DepthGuard g(&depth_);
    if (depth_ > kMaxExprDepth) return error("expression nested too deeply");
    RIDGE_ASSIGN_OR_RETURN(ExprPtr x, parse_not());
    ExprPtr n = make(ExprKind::kNot, line);
    n->args.push_back(std::move(x));
    return n;
  }
  return parse_compare();
}

Result<ExprPtr> ExprParser::parse_compare() {
  int line = cur().line;
  RIDGE_ASSIGN_OR_RETURN(ExprPtr first, parse_math1());
  ExprPtr cmp;
  while (true) {
    std::string op;
    if (cur().type == Token::Type::kOp &&
        (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
         cur().text == ">" || cur().text == ">=")) {
      op = cur().text;
      advance();
    } else if (is_name("in")) {
      op = "in";
      advance();
    } else if (is_name("not") && peek().type == Token::Type::kName && peek().text == "in") {
      op = "not in";
      advance();
      advance();
    } else {
      break;
    }
    if (!cmp) {
      cmp = make(ExprKind::kCompare, line);
      cmp->args.push_back(std::move(first));
    }
    RIDGE_ASSIGN_OR_RETURN(ExprPtr r, parse_math1());
    cmp->args.push_back(std::move(r));
    cmp->ops.push_back(std::move(op));
  }
  if (cmp) return cmp;
  return first;
}

template <typename Next>
Result<ExprPtr> ExprParser::binary_level(std::initializer_list<std::string_view> ops, Next next) {
  RIDGE_ASSIGN_OR_RETURN(ExprPtr l, next());
  while (cur().type == Token::Type::kOp &&
         std::find(ops.begin(), ops.end(), cur().text) != ops.end()) {
    ExprPtr n = make(ExprKind::kBinary, cur().line);
    n->name = cur().text;
    advance();
    RIDGE_ASSIGN_OR_RETURN(ExprPtr r, next());
    n->args.push_back(std::move(l));
    n->args.push_back(std::move(r));
    l = std::move(n);
  }
  return l;
}

Result<ExprPtr> ExprParser::parse_math1() {
  return binary_level({"+", "-"}, [this] { return parse_concat(); });
}
Result<ExprPtr> ExprParser::parse_concat() {
  return binary_level({"~"}, [this] { return parse_math2(); });
}
Result<ExprPtr> ExprParser::parse_math2() {
  return binary_level({"*", "/", "//", "%"}, [this] { return parse_pow(); });
}
Result<ExprPtr> ExprParser::parse_pow() {
  return binary_level({"**"}, [this] { return parse_unary(true); });
}

Result<ExprPtr> ExprParser::parse_unary(bool with_filter) {
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    ExprPtr n = make(is_op("-") ? ExprKind::kNeg : ExprKind::kPos, cur().line);
    advance();
    DepthGuard g(&depth_);
    if (depth_ > kMaxExprDepth) return error("expression nested too deeply");
    RIDGE_ASSIGN_OR_RETURN(ExprPtr x, parse_unary(false));
    n->args.push_back(std::move(x));
    node = std::move(n);
  } else {
    RIDGE_ASSIGN_OR_RETURN(node, parse_primary());
  }
  RIDGE_ASSIGN_OR_RETURN(node, parse_postfix(std::move(node)));
  if (with_filter) return parse_filter_expr(std::move(node));
  return node;
}

Result<ExprPtr> ExprParser::parse_primary() {
  const Token& t = cur();
  int line = t.line;
  if (t.type == Token::Type::kName) {
    ExprPtr e = make(ExprKind::kConst, line);
    const std::string& n = t.text;
    if (n == "true" || n == "True") {
      e->value = Value::boolean(true);
    } else if (n == "false" || n == "False") {
      e->value = Value::boolean(false);
    } else if (n == "none" || n == "None") {
      e->value = Value::none();
    } else {
      e->kind = ExprKind::kName;
      e->name = n;
    }
    advance();
    return e;
  }
  if (t.type == Token::Type::kString) {
    std::string s;
    while (cur().type == Token::Type::kString) {
      s += cur().text;
      advance();
    }
    ExprPtr e = make(ExprKind::kConst, line);
    e->value = Value::string(std::move(s));
    return e;
  }
  if (t.type == Token::Type::kInt || t.type == Token::Type::kFloat) {
    ExprPtr e = make(ExprKind::kConst, line);
    e->value = t.type == Token::Type::kInt ? Value::integer(t.ival) : Value::number(t.fval);
    advance();
    return e;
  }
  if (is_op("(")) {
    advance();
    RIDGE_ASSIGN_OR_RETURN(ExprPtr e, parse_tuple(true, true));
    RIDGE_RETURN_IF_ERROR(expect_op(")"));
    return e;
  }
  if (is_op("[") || is_op("{")) {
    bool is_dict = is_op("{");
    std::string close = is_dict ? "}" : "]";
    ExprPtr e = make(is_dict ? ExprKind::kDict : ExprKind::kList, line);
    advance();
    while (!is_op(close)) {
      if (!e->args.empty()) {
        RIDGE_RETURN_IF_ERROR(expect_op(","));
        if (is_op(close)) break;
      }
      RIDGE_ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
      e->args.push_back(std::move(item));
      if (is_dict) {
        RIDGE_RETURN_IF_ERROR(expect_op(":"));
        RIDGE_ASSIGN_OR_RETURN(ExprPtr val, parse_expression());
        e->args.push_back(std::move(val));
      }
    }
    advance();
    return e;
  }
  return error(fmt::format("unexpected {}", describe_token(t)));
}

Result<ExprPtr> ExprParser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      RIDGE_ASSIGN_OR_RETURN(node, parse_subscript(std::move(node)));
    } else if (is_op("(")) {
      ExprPtr c = make(ExprKind::kCall, cur().line);
      c->args.push_back(std::move(node));
      RIDGE_RETURN_IF_ERROR(parse_call_args(c.get()));
      node = std::move(c);
    } else {
      return node;
    }
  }
}

Result<ExprPtr> ExprParser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      RIDGE_ASSIGN_OR_RETURN(node, parse_filter(std::move(node)));
    } else if (is_name("is")) {
      RIDGE_ASSIGN_OR_RETURN(node, parse_test(std::move(node)));
    } else if (is_op("(")) {
      ExprPtr c = make(ExprKind::kCall, cur().line);
      c->args.push_back(std::move(node));
      RIDGE_RETURN_IF_ERROR(parse_call_args(c.get()));
      node = std::move(c);
    } else {
      return node;
    }
  }
}

}  // namespace ridge::chat::jinja
