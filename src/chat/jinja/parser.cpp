// Statement structure: if / for / set / macro / call / filter / break / continue /
// generation, over the lexer's segments.
#include "chat/jinja/parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "chat/jinja/filters.h"

namespace ridge::chat::jinja {
namespace {

constexpr int kMaxBlockDepth = 100;

class StmtParser {
 public:
  explicit StmtParser(std::vector<Segment> segs) : segs_(std::move(segs)) {}

  Result<std::shared_ptr<const TemplateAst>> run() {
    auto ast = std::make_shared<TemplateAst>();
    RIDGE_ASSIGN_OR_RETURN(ast->body, parse_body({}));
    if (idx_ < segs_.size()) {
      const Segment& s = segs_[idx_];
      return template_error(s.line, fmt::format("unexpected '{}'", s.tokens[0].text));
    }
    return std::shared_ptr<const TemplateAst>(std::move(ast));
  }

 private:
  // Parses nodes until a statement whose keyword is in `ends` (left unconsumed) or the end.
  Result<NodeList> parse_body(std::initializer_list<std::string_view> ends) {
    NodeList out;
    if (++depth_ > kMaxBlockDepth) {
      return template_error(idx_ < segs_.size() ? segs_[idx_].line : 0, "blocks nested too deeply");
    }
    while (idx_ < segs_.size()) {
      const Segment& seg = segs_[idx_];
      if (seg.type == Segment::Type::kText) {
        auto n = std::make_unique<Node>();
        n->kind = NodeKind::kText;
        n->line = seg.line;
        n->text = seg.text;
        out.push_back(std::move(n));
        ++idx_;
        continue;
      }
      if (seg.type == Segment::Type::kPrint) {
        ExprParser p(seg.tokens);
        auto n = std::make_unique<Node>();
        n->kind = NodeKind::kPrint;
        n->line = seg.line;
        RIDGE_ASSIGN_OR_RETURN(n->expr, p.parse_tuple(true));
        if (!p.at_end()) return p.error("expected end of print statement");
        out.push_back(std::move(n));
        ++idx_;
        continue;
      }
      const Token& kw = seg.tokens[0];
      if (kw.type != Token::Type::kName) return template_error(seg.line, "expected a statement");
      if (std::find(ends.begin(), ends.end(), kw.text) != ends.end()) break;
      ++idx_;
      RIDGE_ASSIGN_OR_RETURN(NodePtr n, parse_statement(seg));
      out.push_back(std::move(n));
    }
    --depth_;
    return out;
  }

  // Consumes the closing statement, which must be one of `names`; returns its keyword.
  Result<std::string> expect_end(const Segment& open, std::initializer_list<std::string_view> names,
                                 ExprParser** parser_out = nullptr) {
    if (idx_ >= segs_.size()) {
      return template_error(open.line, fmt::format("unclosed '{}' (expected '{}')",
                                                   open.tokens[0].text, *names.begin()));
    }
    const Segment& seg = segs_[idx_++];
    std::string kw = seg.tokens[0].text;
    closing_ = std::make_unique<ExprParser>(seg.tokens);
    closing_->advance();
    if (parser_out != nullptr) {
      *parser_out = closing_.get();
    } else if (!closing_->at_end()) {
      return closing_->error(fmt::format("unexpected tokens after '{}'", kw));
    }
    return kw;
  }

  Result<NodePtr> parse_statement(const Segment& seg) {
    ExprParser p(seg.tokens);
    const std::string kw = seg.tokens[0].text;
    p.advance();
    auto n = std::make_unique<Node>();
    n->line = seg.line;
    if (kw == "if") {
      n->kind = NodeKind::kIf;
      RIDGE_ASSIGN_OR_RETURN(ExprPtr cond, p.parse_tuple(false));
      if (!p.at_end()) return p.error("expected end of 'if'");
      while (true) {
        RIDGE_ASSIGN_OR_RETURN(NodeList body, parse_body({"elif", "else", "endif"}));
        n->branches.emplace_back(std::move(cond), std::move(body));
        ExprParser* ep = nullptr;
        RIDGE_ASSIGN_OR_RETURN(std::string end, expect_end(seg, {"endif"}, &ep));
        if (end == "endif") {
          if (!ep->at_end()) return ep->error("unexpected tokens after 'endif'");
          break;
        }
        if (end == "else") {
          if (!ep->at_end()) return ep->error("unexpected tokens after 'else'");
          RIDGE_ASSIGN_OR_RETURN(NodeList eb, parse_body({"endif"}));
          n->branches.emplace_back(nullptr, std::move(eb));
          RIDGE_RETURN_IF_ERROR(expect_end(seg, {"endif"}).status());
          break;
        }
        RIDGE_ASSIGN_OR_RETURN(cond, ep->parse_tuple(false));  // elif
        if (!ep->at_end()) return ep->error("expected end of 'elif'");
      }
      return n;
    }
    if (kw == "for") {
      n->kind = NodeKind::kFor;
      RIDGE_RETURN_IF_ERROR(parse_targets(p, n.get(), false));
      if (!p.is_name("in")) return p.error("expected 'in' in 'for'");
      p.advance();
      RIDGE_ASSIGN_OR_RETURN(n->expr, p.parse_tuple(false, false, "recursive"));
      if (p.is_name("if")) {
        p.advance();
        RIDGE_ASSIGN_OR_RETURN(n->cond, p.parse_expression());
      }
      if (p.is_name("recursive")) return p.error("unsupported recursive loop");
      if (!p.at_end()) return p.error("expected end of 'for'");
      ++loop_depth_;
      RIDGE_ASSIGN_OR_RETURN(n->body, parse_body({"else", "endfor"}));
      --loop_depth_;
      RIDGE_ASSIGN_OR_RETURN(std::string end, expect_end(seg, {"endfor"}));
      if (end == "else") {
        RIDGE_ASSIGN_OR_RETURN(n->else_body, parse_body({"endfor"}));
        RIDGE_ASSIGN_OR_RETURN(end, expect_end(seg, {"endfor"}));
      }
      if (end != "endfor") return template_error(seg.line, "unclosed 'for'");
      return n;
    }
    if (kw == "set") {
      RIDGE_RETURN_IF_ERROR(parse_targets(p, n.get(), true));
      if (p.is_op("=")) {
        p.advance();
        n->kind = NodeKind::kSet;
        RIDGE_ASSIGN_OR_RETURN(n->expr, p.parse_tuple(true));
        if (!p.at_end()) return p.error("expected end of 'set'");
        return n;
      }
      n->kind = NodeKind::kSetBlock;
      if (n->unpack) return p.error("a block 'set' takes one name");
      if (p.is_op("|")) {
        RIDGE_ASSIGN_OR_RETURN(n->expr, parse_filter_chain(p));
      }
      if (!p.at_end()) return p.error("expected '=' or end of 'set'");
      RIDGE_ASSIGN_OR_RETURN(n->body, parse_body({"endset"}));
      RIDGE_ASSIGN_OR_RETURN(std::string end, expect_end(seg, {"endset"}));
      if (end != "endset") return template_error(seg.line, "unclosed 'set'");
      return n;
    }
    if (kw == "macro") {
      n->kind = NodeKind::kMacro;
      RIDGE_ASSIGN_OR_RETURN(n->text, p.expect_name());
      RIDGE_RETURN_IF_ERROR(parse_signature(p, n.get()));
      if (!p.at_end()) return p.error("expected end of 'macro'");
      int saved = loop_depth_;
      loop_depth_ = 0;
      RIDGE_ASSIGN_OR_RETURN(n->body, parse_body({"endmacro"}));
      loop_depth_ = saved;
      ExprParser* ep = nullptr;
      RIDGE_ASSIGN_OR_RETURN(std::string end, expect_end(seg, {"endmacro"}, &ep));
      if (end != "endmacro") return template_error(seg.line, "unclosed 'macro'");
      if (ep->cur().type == Token::Type::kName) ep->advance();  // {% endmacro name %}
      if (!ep->at_end()) return ep->error("unexpected tokens after 'endmacro'");
      return n;
    }
    if (kw == "call") {
      n->kind = NodeKind::kCallBlock;
      if (p.is_op("(")) RIDGE_RETURN_IF_ERROR(parse_signature(p, n.get()));
      RIDGE_ASSIGN_OR_RETURN(n->expr, p.parse_expression());
      if (n->expr->kind != ExprKind::kCall) return p.error("expected a call in 'call'");
      if (!p.at_end()) return p.error("expected end of 'call'");
      int saved = loop_depth_;
      loop_depth_ = 0;
      RIDGE_ASSIGN_OR_RETURN(n->body, parse_body({"endcall"}));
      loop_depth_ = saved;
      RIDGE_ASSIGN_OR_RETURN(std::string end, expect_end(seg, {"endcall"}));
      if (end != "endcall") return template_error(seg.line, "unclosed 'call'");
      return n;
    }
    if (kw == "filter") {
      n->kind = NodeKind::kFilterBlock;
      RIDGE_ASSIGN_OR_RETURN(n->expr, parse_filter_chain(p, false));
      if (!p.at_end()) return p.error("expected end of 'filter'");
      RIDGE_ASSIGN_OR_RETURN(n->body, parse_body({"endfilter"}));
      RIDGE_ASSIGN_OR_RETURN(std::string end, expect_end(seg, {"endfilter"}));
      if (end != "endfilter") return template_error(seg.line, "unclosed 'filter'");
      return n;
    }
    if (kw == "generation") {  // Hugging Face's AssistantTracker: renders its body
      n->kind = NodeKind::kScope;
      if (!p.at_end()) return p.error("expected end of 'generation'");
      RIDGE_ASSIGN_OR_RETURN(n->body, parse_body({"endgeneration"}));
      RIDGE_ASSIGN_OR_RETURN(std::string end, expect_end(seg, {"endgeneration"}));
      if (end != "endgeneration") return template_error(seg.line, "unclosed 'generation'");
      return n;
    }
    if (kw == "break" || kw == "continue") {
      if (loop_depth_ == 0) return template_error(seg.line, fmt::format("'{}' outside a loop", kw));
      if (!p.at_end()) return p.error(fmt::format("expected end of '{}'", kw));
      n->kind = kw == "break" ? NodeKind::kBreak : NodeKind::kContinue;
      return n;
    }
    static constexpr std::string_view kKnown[] = {"extends", "include",    "import", "from",
                                                  "block",   "autoescape", "with",   "do",
                                                  "trans",   "pluralize",  "raw",    "print"};
    for (auto k : kKnown) {
      if (kw == k) return template_error(seg.line, fmt::format("unsupported '{{% {} %}}'", kw));
    }
    return template_error(seg.line, fmt::format("unsupported statement '{}'", kw));
  }

  // Loop / assignment targets: "x", "a, b", "(a, b)", and for set also "ns.attr".
  Status parse_targets(ExprParser& p, Node* n, bool is_set) {
    bool parens = p.is_op("(");
    if (parens) p.advance();
    RIDGE_ASSIGN_OR_RETURN(std::string first, p.expect_name());
    n->targets.push_back(first);
    if (is_set && !parens && p.is_op(".")) {
      p.advance();
      RIDGE_ASSIGN_OR_RETURN(n->attr, p.expect_name());
      return ok_status();
    }
    while (p.is_op(",")) {
      p.advance();
      if (parens && p.is_op(")")) break;
      if (!parens && (p.is_name("in") || p.is_op("="))) break;
      RIDGE_ASSIGN_OR_RETURN(std::string name, p.expect_name());
      n->targets.push_back(std::move(name));
      n->unpack = true;
    }
    if (parens) {
      RIDGE_RETURN_IF_ERROR(p.expect_op(")"));
      n->unpack = true;
    }
    if (n->targets.size() > 1) n->unpack = true;
    return ok_status();
  }

  Status parse_signature(ExprParser& p, Node* n) {
    RIDGE_RETURN_IF_ERROR(p.expect_op("("));
    while (!p.is_op(")")) {
      if (!n->params.empty()) RIDGE_RETURN_IF_ERROR(p.expect_op(","));
      if (p.is_op(")")) break;
      RIDGE_ASSIGN_OR_RETURN(std::string name, p.expect_name());
      ExprPtr def;
      if (p.is_op("=")) {
        p.advance();
        RIDGE_ASSIGN_OR_RETURN(def, p.parse_expression());
      } else if (!n->defaults.empty() && n->defaults.back() != nullptr) {
        return p.error("non-default argument follows default argument");
      }
      n->params.push_back(std::move(name));
      n->defaults.push_back(std::move(def));
    }
    p.advance();
    return ok_status();
  }

  // "| f(args) | g" with a null input (filter blocks and block sets).
  Result<ExprPtr> parse_filter_chain(ExprParser& p, bool leading_pipe = true) {
    ExprPtr chain;
    if (!leading_pipe) {
      // {% filter upper %}: the first filter has no pipe
      if (p.cur().type != Token::Type::kName) return p.error("expected a filter name");
      RIDGE_ASSIGN_OR_RETURN(chain, filter_without_pipe(p));
    }
    while (p.is_op("|")) {
      RIDGE_ASSIGN_OR_RETURN(chain, p.parse_filter(std::move(chain)));
    }
    if (!chain) return p.error("expected a filter");
    return chain;
  }

  Result<ExprPtr> filter_without_pipe(ExprParser& p) {
    // Reuse parse_filter by pretending a pipe: build the node by hand.
    int line = p.cur().line;
    std::string name = p.cur().text;
    int id = find_filter(name);
    if (id < 0) return template_error(line, fmt::format("unsupported filter '{}'", name));
    p.advance();
    auto f = std::make_unique<Expr>();
    f->kind = ExprKind::kFilter;
    f->line = line;
    f->name = name;
    f->fn_id = id;
    f->args.push_back(nullptr);
    if (p.is_op("(")) RIDGE_RETURN_IF_ERROR(p.parse_call_args(f.get()));
    return f;
  }

  std::vector<Segment> segs_;
  size_t idx_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  std::unique_ptr<ExprParser> closing_;
};

}  // namespace

Result<std::shared_ptr<const TemplateAst>> parse_template(std::string_view source) {
  RIDGE_ASSIGN_OR_RETURN(std::vector<Segment> segs, lex_template(source));
  return StmtParser(std::move(segs)).run();
}

}  // namespace ridge::chat::jinja
