// Template source -> TemplateAst. Unsupported statements, filters and tests are errors here.
#pragma once

#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/jinja/ast.h"
#include "chat/jinja/lexer.h"

namespace ridge::chat::jinja {

Result<std::shared_ptr<const TemplateAst>> parse_template(std::string_view source);

// Expression parsing over one tag's tokens (jinja2's grammar and operator precedence).
class ExprParser {
 public:
  explicit ExprParser(const std::vector<Token>& tokens) : t_(tokens) {}

  // A tuple without parentheses ("a, b") or a single expression.
  Result<ExprPtr> parse_tuple(bool with_condexpr, bool explicit_parens = false,
                              std::string_view extra_end = {});
  Result<ExprPtr> parse_expression(bool with_condexpr = true);
  // Parses "| name(args)" after the pipe was seen (input may be null: a filter block).
  Result<ExprPtr> parse_filter(ExprPtr input);
  // Call arguments after "(" up to and including ")".
  Status parse_call_args(Expr* call);

  const Token& cur() const { return t_[pos_]; }
  const Token& peek(size_t k = 1) const { return pos_ + k < t_.size() ? t_[pos_ + k] : t_.back(); }
  void advance() {
    if (pos_ + 1 < t_.size()) ++pos_;
  }
  bool at_end() const { return cur().type == Token::Type::kEnd; }
  bool is_op(std::string_view op) const {
    return cur().type == Token::Type::kOp && cur().text == op;
  }
  bool is_name(std::string_view name) const {
    return cur().type == Token::Type::kName && cur().text == name;
  }
  Status expect_op(std::string_view op);
  Result<std::string> expect_name();
  Status error(std::string_view msg) const;

 private:
  Result<ExprPtr> parse_condexpr();
  Result<ExprPtr> parse_or();
  Result<ExprPtr> parse_and();
  Result<ExprPtr> parse_not();
  Result<ExprPtr> parse_compare();
  Result<ExprPtr> parse_math1();
  Result<ExprPtr> parse_concat();
  Result<ExprPtr> parse_math2();
  Result<ExprPtr> parse_pow();
  Result<ExprPtr> parse_unary(bool with_filter);
  Result<ExprPtr> parse_primary();
  Result<ExprPtr> parse_postfix(ExprPtr node);
  Result<ExprPtr> parse_filter_expr(ExprPtr node);
  Result<ExprPtr> parse_subscript(ExprPtr node);
  Result<ExprPtr> parse_subscribed();
  Result<ExprPtr> parse_test(ExprPtr node);
  ExprPtr make(ExprKind kind, int line);
  template <typename Next>
  Result<ExprPtr> binary_level(std::initializer_list<std::string_view> ops, Next next);

  const std::vector<Token>& t_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace ridge::chat::jinja
