// GBNF text -> GrammarBuilder. Newlines are ordinary whitespace; a rule ends where the next
// `name ::=` begins (or at the end of the text), so multi-line rules need no special layout.
#include <fmt/format.h>

#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "grammar/grammar.h"
#include "grammar/grammar_builder.h"
#include "grammar/utf8.h"

namespace ridge::grammar {
namespace {

constexpr int kMaxNesting = 128;
constexpr uint32_t kMaxRepeat = 10000;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

class Parser {
 public:
  Parser(std::string_view src, GrammarBuilder& b, const TokenResolver* tokens)
      : src_(src), b_(b), tokens_(tokens) {}

  Status parse() {
    skip_space();
    if (pos_ == src_.size()) return error(pos_, "empty grammar (no rules)");
    while (pos_ < src_.size()) {
      const size_t start = pos_;
      const std::string_view name = read_name();
      if (name.empty()) return error(pos_, "expected a rule name");
      skip_space();
      if (src_.substr(pos_, 3) != "::=") return error(pos_, "expected '::=' after rule name");
      pos_ += 3;
      const uint32_t id = b_.rule_id(name, start);
      BuilderRule& r = b_.rules()[id];
      if (r.defined) return error(start, fmt::format("rule '{}' is defined twice", name));
      r.defined = true;
      r.pos = start;
      std::vector<std::vector<Element>> alts;
      RIDGE_RETURN_IF_ERROR(parse_alternatives(std::string(name), alts, 0));
      b_.rules()[id].alts = std::move(alts);
      if (pos_ < src_.size()) {
        if (src_[pos_] == ')') return error(pos_, "unbalanced ')'");
        if (!at_rule_start()) return error(pos_, "unexpected character");
      }
    }
    return ok_status();
  }

 private:
  Status error(size_t pos, std::string_view what) const {
    return Status::usage(grammar_where(src_, pos) + std::string(what));
  }

  void skip_space() {
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view read_name() {
    const size_t start = pos_;
    while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
    return src_.substr(start, pos_ - start);
  }

  // At `name ::=`? (does not move)
  bool at_rule_start() {
    const size_t save = pos_;
    const bool named = !read_name().empty();
    skip_space();
    const bool yes = named && src_.substr(pos_, 3) == "::=";
    pos_ = save;
    return yes;
  }

  Status parse_alternatives(const std::string& rule, std::vector<std::vector<Element>>& alts,
                            int depth) {
    if (depth > kMaxNesting) return error(pos_, "groups nested too deeply");
    for (;;) {
      std::vector<Element> seq;
      RIDGE_RETURN_IF_ERROR(parse_sequence(rule, seq, depth));
      alts.push_back(std::move(seq));
      skip_space();
      if (pos_ < src_.size() && src_[pos_] == '|') {
        ++pos_;
        continue;
      }
      return ok_status();
    }
  }

  Status parse_sequence(const std::string& rule, std::vector<Element>& seq, int depth) {
    for (;;) {
      skip_space();
      if (pos_ >= src_.size()) return ok_status();
      const char c = src_[pos_];
      if (c == '|' || c == ')') return ok_status();
      if (is_name_char(c) && at_rule_start()) return ok_status();
      const size_t atom_pos = pos_;
      std::vector<Element> atom;
      RIDGE_RETURN_IF_ERROR(parse_atom(rule, atom, depth));
      RIDGE_RETURN_IF_ERROR(parse_postfix(rule, atom_pos, atom));
      if (!b_.charge(atom.size())) return error(atom_pos, "grammar too large");
      seq.insert(seq.end(), atom.begin(), atom.end());
    }
  }

  Status parse_atom(const std::string& rule, std::vector<Element>& out, int depth) {
    const char c = src_[pos_];
    if (c == '"') return parse_literal(out);
    if (c == '[') return parse_class(out);
    if (c == '<') return parse_token(out, false);
    if (c == '!' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '<') {
      ++pos_;
      return parse_token(out, true);
    }
    if (c == '.') {
      ++pos_;
      out.push_back({ElemKind::kChars, b_.add_class({{0, 0x10FFFF}}, false)});
      return ok_status();
    }
    if (c == '(') {
      const size_t open = pos_++;
      std::vector<std::vector<Element>> alts;
      RIDGE_RETURN_IF_ERROR(parse_alternatives(rule, alts, depth + 1));
      skip_space();
      if (pos_ >= src_.size() || src_[pos_] != ')') return error(open, "unclosed '('");
      ++pos_;
      if (alts.size() == 1) {
        out = std::move(alts[0]);
      } else {
        out.push_back({ElemKind::kRule, b_.add_synthetic(rule, open, std::move(alts))});
      }
      return ok_status();
    }
    if (is_name_char(c)) {
      const size_t at = pos_;
      const std::string_view name = read_name();
      out.push_back({ElemKind::kRule, b_.rule_id(name, at)});
      return ok_status();
    }
    return error(pos_, fmt::format("unexpected character '{}'", c));
  }

  // One code point of the source (UTF-8), or an escape when `escapes` is set.
  Status read_char(uint32_t* cp) {
    if (pos_ >= src_.size()) return error(pos_, "unexpected end of grammar");
    const auto b = static_cast<uint8_t>(src_[pos_]);
    if (b == '\\') {
      if (pos_ + 1 >= src_.size()) return error(pos_, "unexpected end of grammar");
      const char e = src_[pos_ + 1];
      const size_t at = pos_;
      pos_ += 2;
      switch (e) {
        case 'n':
          *cp = '\n';
          return ok_status();
        case 'r':
          *cp = '\r';
          return ok_status();
        case 't':
          *cp = '\t';
          return ok_status();
        case '0':
          *cp = 0;
          return ok_status();
        case '\\':
        case '"':
        case '\'':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
        case '.':
        case '(':
        case ')':
        case '|':
          *cp = static_cast<uint8_t>(e);
          return ok_status();
        case 'x':
          return read_hex(2, at, cp);
        case 'u':
          return read_hex(4, at, cp);
        case 'U':
          return read_hex(8, at, cp);
        default:
          return error(at, fmt::format("unknown escape '\\{}'", e));
      }
    }
    Utf8Partial p;
    const size_t at = pos_;
    for (;;) {
      if (pos_ >= src_.size()) return error(at, "invalid UTF-8 in grammar");
      const Utf8Step st = utf8_feed(p, static_cast<uint8_t>(src_[pos_++]), cp);
      if (st == Utf8Step::kInvalid) return error(at, "invalid UTF-8 in grammar");
      if (st == Utf8Step::kComplete) return ok_status();
    }
  }

  Status read_hex(int digits, size_t at, uint32_t* cp) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (pos_ >= src_.size()) return error(at, "truncated hex escape");
      const char h = src_[pos_++];
      uint32_t d = 0;
      if (h >= '0' && h <= '9')
        d = static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f')
        d = static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        d = static_cast<uint32_t>(h - 'A' + 10);
      else
        return error(at, "bad hex escape");
      v = v * 16 + d;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
      return error(at, "escape is not a Unicode scalar value");
    }
    *cp = v;
    return ok_status();
  }

  Status parse_literal(std::vector<Element>& out) {
    const size_t open = pos_++;
    for (;;) {
      if (pos_ >= src_.size()) return error(open, "unterminated string literal");
      if (src_[pos_] == '"') {
        ++pos_;
        return ok_status();
      }
      uint32_t cp = 0;
      RIDGE_RETURN_IF_ERROR(read_char(&cp));
      out.push_back({ElemKind::kChars, b_.add_class({{cp, cp}}, false)});
    }
  }

  Status parse_class(std::vector<Element>& out) {
    const size_t open = pos_++;
    bool negated = false;
    if (pos_ < src_.size() && src_[pos_] == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<CharRange> ranges;
    for (;;) {
      if (pos_ >= src_.size()) return error(open, "unterminated character class");
      if (src_[pos_] == ']') {
        ++pos_;
        break;
      }
      uint32_t lo = 0, hi = 0;
      RIDGE_RETURN_IF_ERROR(read_char(&lo));
      hi = lo;
      if (pos_ + 1 < src_.size() && src_[pos_] == '-' && src_[pos_ + 1] != ']') {
        ++pos_;
        const size_t at = pos_;
        RIDGE_RETURN_IF_ERROR(read_char(&hi));
        if (hi < lo) return error(at, "character range is reversed");
      }
      ranges.push_back({lo, hi});
    }
    out.push_back({ElemKind::kChars, b_.add_class(std::move(ranges), negated)});
    return ok_status();
  }

  // A token reference: <[id]>; <text>, llama.cpp's form, whose text runs to the first '>' and
  // includes both brackets (<|end|>); or <"text">, a string literal holding any token text
  // (<"[TOOL_CALLS]">). A leading '!' (already read) negates it.
  Status parse_token(std::vector<Element>& out, bool negated) {
    const size_t open = pos_++;
    const size_t at = negated ? open - 1 : open;
    std::optional<int64_t> id;
    std::string text;
    if (pos_ < src_.size() && src_[pos_] == '[') {
      int64_t n = 0;
      size_t digits = 0;
      for (++pos_; pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '9'; ++pos_, ++digits) {
        n = std::min<int64_t>(n * 10 + (src_[pos_] - '0'), int64_t{1} << 32);
      }
      if (digits == 0 || src_.substr(pos_, 2) != "]>") return error(open, "expected '<[id]>'");
      pos_ += 2;
      if (n <= std::numeric_limits<int32_t>::max() && (!tokens_ || n < tokens_->n_vocab)) id = n;
    } else if (pos_ < src_.size() && src_[pos_] == '"') {
      for (++pos_;;) {
        if (pos_ >= src_.size()) return error(open, "unterminated token reference");
        if (src_[pos_] == '"') break;
        uint32_t cp = 0;
        RIDGE_RETURN_IF_ERROR(read_char(&cp));
        utf8_append(text, cp);
      }
      if (src_.substr(pos_, 2) != "\">") return error(open, "expected '\">' after the token text");
      pos_ += 2;
    } else {
      const size_t close = src_.find('>', pos_);
      if (close == std::string_view::npos) return error(open, "unterminated token reference");
      pos_ = close + 1;
      text = std::string(src_.substr(open, pos_ - open));
    }
    const std::string_view written = src_.substr(at, pos_ - at);
    if (!id && !text.empty() && tokens_ && tokens_->find) {
      const std::optional<int32_t> found = tokens_->find(text);
      if (found && *found >= 0 && *found < tokens_->n_vocab) id = *found;
    }
    if (!id) {
      return error(at, fmt::format("unknown token '{}'{}", written,
                                   tokens_ || text.empty() ? "" : " (no vocabulary to resolve it)"));
    }
    out.push_back({negated ? ElemKind::kTokenNot : ElemKind::kToken, static_cast<uint32_t>(*id)});
    return ok_status();
  }

  Status read_count(uint32_t* v) {
    skip_space();
    const size_t at = pos_;
    uint64_t n = 0;
    while (pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '9') {
      n = n * 10 + static_cast<uint64_t>(src_[pos_++] - '0');
      if (n > kMaxRepeat) return error(at, fmt::format("repetition count over {}", kMaxRepeat));
    }
    if (pos_ == at) return error(at, "expected a number");
    *v = static_cast<uint32_t>(n);
    skip_space();
    return ok_status();
  }

  Status parse_postfix(const std::string& rule, size_t atom_pos, std::vector<Element>& atom) {
    for (;;) {
      if (pos_ >= src_.size()) return ok_status();
      const char c = src_[pos_];
      uint32_t lo = 0, hi = 0;
      bool unbounded = false;
      const size_t op = pos_;
      if (c == '*') {
        unbounded = true;
        ++pos_;
      } else if (c == '+') {
        lo = 1;
        unbounded = true;
        ++pos_;
      } else if (c == '?') {
        hi = 1;
        ++pos_;
      } else if (c == '{') {
        ++pos_;
        RIDGE_RETURN_IF_ERROR(read_count(&lo));
        hi = lo;
        if (pos_ < src_.size() && src_[pos_] == ',') {
          ++pos_;
          skip_space();
          if (pos_ < src_.size() && src_[pos_] == '}') {
            unbounded = true;
          } else {
            RIDGE_RETURN_IF_ERROR(read_count(&hi));
          }
        }
        if (pos_ >= src_.size() || src_[pos_] != '}') return error(op, "expected '}'");
        ++pos_;
        if (!unbounded && hi < lo) return error(op, "repetition {m,n} with n < m");
      } else {
        return ok_status();
      }
      if (!b_.charge(atom.size() * (size_t{lo} + (unbounded ? 1 : hi - lo)) + 4)) {
        return error(op, "grammar too large");
      }
      atom = repeat(rule, atom_pos, std::move(atom), lo, hi, unbounded);
    }
  }

  // x{lo,hi} / x{lo,}: lo copies, then an optional chain or a star rule.
  std::vector<Element> repeat(const std::string& rule, size_t pos, std::vector<Element> x,
                              uint32_t lo, uint32_t hi, bool unbounded) {
    Element one = x.size() == 1 ? x[0] : Element{ElemKind::kRule, b_.add_synthetic(rule, pos, {x})};
    std::vector<Element> out(lo, one);
    if (unbounded) {
      // star ::= one star | (empty)
      const uint32_t star = b_.add_synthetic(rule, pos, {});
      b_.rules()[star].alts = {{one, Element{ElemKind::kRule, star}}, {}};
      out.push_back({ElemKind::kRule, star});
    } else if (hi > lo) {
      // opt_1 ::= one | (empty);  opt_k ::= one opt_{k-1} | (empty)
      uint32_t prev = b_.add_synthetic(rule, pos, {{one}, {}});
      for (uint32_t k = 2; k <= hi - lo; ++k) {
        prev = b_.add_synthetic(rule, pos, {{one, Element{ElemKind::kRule, prev}}, {}});
      }
      out.push_back({ElemKind::kRule, prev});
    }
    return out;
  }

  std::string_view src_;
  GrammarBuilder& b_;
  const TokenResolver* tokens_;
  size_t pos_ = 0;
};

}  // namespace

Result<std::shared_ptr<const Grammar>> parse_gbnf(std::string_view source, std::string_view root,
                                                  const TokenResolver* tokens) {
  GrammarBuilder b;
  Parser p(source, b, tokens);
  RIDGE_RETURN_IF_ERROR(p.parse());
  return b.build(source, root);
}

}  // namespace ridge::grammar
