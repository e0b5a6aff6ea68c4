// Postfix syntax: subscripts and slices, call arguments, filters and tests.
#include <fmt/format.h>

#include "chat/jinja/filters.h"
#include "chat/jinja/parser.h"

namespace ridge::chat::jinja {
Result<ExprPtr> ExprParser::parse_subscript(ExprPtr node) {
  int line = cur().line;
  if (is_op(".")) {
    advance();
    if (cur().type == Token::Type::kName) {
      ExprPtr e = make(ExprKind::kAttr, line);
      e->name = cur().text;
      e->args.push_back(std::move(node));
      advance();
      return e;
    }
    if (cur().type == Token::Type::kInt) {
      ExprPtr e = make(ExprKind::kItem, line);
      ExprPtr k = make(ExprKind::kConst, line);
      k->value = Value::integer(cur().ival);
      e->args.push_back(std::move(node));
      e->args.push_back(std::move(k));
      advance();
      return e;
    }
    return error(fmt::format("expected an attribute name, got {}", describe_token(cur())));
  }
  RIDGE_RETURN_IF_ERROR(expect_op("["));
  RIDGE_ASSIGN_OR_RETURN(ExprPtr sub, parse_subscribed());
  if (is_op(",")) return error("unsupported tuple subscript");
  RIDGE_RETURN_IF_ERROR(expect_op("]"));
  if (sub->kind == ExprKind::kSlice) {
    sub->args.insert(sub->args.begin(), std::move(node));
    return sub;
  }
  ExprPtr e = make(ExprKind::kItem, line);
  e->args.push_back(std::move(node));
  e->args.push_back(std::move(sub));
  return e;
}

// An index, or a slice: kSlice with args [start, stop, step] (null where absent).
Result<ExprPtr> ExprParser::parse_subscribed() {
  int line = cur().line;
  std::vector<ExprPtr> parts;
  if (is_op(":")) {
    advance();
    parts.push_back(nullptr);
  } else {
    RIDGE_ASSIGN_OR_RETURN(ExprPtr e, parse_expression());
    if (!is_op(":")) return e;
    advance();
    parts.push_back(std::move(e));
  }
  if (is_op(":")) {
    parts.push_back(nullptr);
  } else if (!is_op("]") && !is_op(",")) {
    RIDGE_ASSIGN_OR_RETURN(ExprPtr e, parse_expression());
    parts.push_back(std::move(e));
  } else {
    parts.push_back(nullptr);
  }
  if (is_op(":")) {
    advance();
    if (!is_op("]") && !is_op(",")) {
      RIDGE_ASSIGN_OR_RETURN(ExprPtr e, parse_expression());
      parts.push_back(std::move(e));
    } else {
      parts.push_back(nullptr);
    }
  } else {
    parts.push_back(nullptr);
  }
  ExprPtr s = make(ExprKind::kSlice, line);
  s->args = std::move(parts);  // [start, stop, step]: parse_subscript puts the object first
  return s;
}

Status ExprParser::parse_call_args(Expr* call) {
  RIDGE_RETURN_IF_ERROR(expect_op("("));
  bool first = true;
  while (!is_op(")")) {
    if (!first) {
      RIDGE_RETURN_IF_ERROR(expect_op(","));
      if (is_op(")")) break;
    }
    first = false;
    if (is_op("*") || is_op("**")) return error("unsupported *args / **kwargs in a call");
    if (cur().type == Token::Type::kName && peek().type == Token::Type::kOp && peek().text == "=") {
      std::string key = cur().text;
      advance();
      advance();
      RIDGE_ASSIGN_OR_RETURN(ExprPtr v, parse_expression());
      call->kwargs.emplace_back(std::move(key), std::move(v));
    } else {
      if (!call->kwargs.empty()) return error("positional argument after keyword argument");
      RIDGE_ASSIGN_OR_RETURN(ExprPtr v, parse_expression());
      call->args.push_back(std::move(v));
    }
  }
  advance();
  return ok_status();
}

Result<ExprPtr> ExprParser::parse_filter(ExprPtr input) {
  RIDGE_RETURN_IF_ERROR(expect_op("|"));
  int line = cur().line;
  RIDGE_ASSIGN_OR_RETURN(std::string name, expect_name());
  int id = find_filter(name);
  if (id < 0) return template_error(line, fmt::format("unsupported filter '{}'", name));
  ExprPtr f = make(ExprKind::kFilter, line);
  f->name = name;
  f->fn_id = id;
  f->args.push_back(std::move(input));
  if (is_op("(")) RIDGE_RETURN_IF_ERROR(parse_call_args(f.get()));
  return f;
}

Result<ExprPtr> ExprParser::parse_test(ExprPtr node) {
  int line = cur().line;
  advance();  // "is"
  bool negated = false;
  if (is_name("not")) {
    negated = true;
    advance();
  }
  RIDGE_ASSIGN_OR_RETURN(std::string name, expect_name());
  int id = find_test(name);
  if (id < 0) return template_error(line, fmt::format("unsupported test '{}'", name));
  ExprPtr t = make(ExprKind::kTest, line);
  t->name = name;
  t->fn_id = id;
  t->negated = negated;
  t->args.push_back(std::move(node));
  if (is_op("(")) {
    RIDGE_RETURN_IF_ERROR(parse_call_args(t.get()));
  } else {
    auto ty = cur().type;
    bool arg_start = ty == Token::Type::kName || ty == Token::Type::kString ||
                     ty == Token::Type::kInt || ty == Token::Type::kFloat || is_op("(") ||
                     is_op("[") || is_op("{");
    if (arg_start && !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) return error("you cannot chain multiple tests with is");
      RIDGE_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
      RIDGE_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
      t->args.push_back(std::move(arg));
    }
  }
  return t;
}

}  // namespace ridge::chat::jinja
