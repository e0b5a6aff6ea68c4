// JSON Schema `pattern` (an ECMA-262 regular expression, the subset in docs/grammar.md) -> a GBNF
// expression over the characters between a JSON string's quotes. Every string the expression
// generates matches the pattern (searched, as JSON Schema does); features whose meaning could
// differ (lookaround, backreferences, word boundaries, inline flags) are refused.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "grammar/json_schema_internal.h"

namespace ridge::grammar::detail {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

constexpr int kMaxGroupDepth = 64;
constexpr uint32_t kMaxCount = 1000;

Ranges normalize(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (auto [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.emplace_back(lo, hi);
    }
  }
  return out;
}

Ranges complement(const Ranges& r) {
  Ranges out;
  uint32_t next = 0;
  for (auto [lo, hi] : normalize(r)) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= 0x10FFFF) out.emplace_back(next, 0x10FFFF);
  return out;
}

struct Piece {
  std::string expr;
  bool nullable = false;
};

class RegexConverter {
 public:
  RegexConverter(std::vector<uint32_t> p, RegexTarget target) : p_(std::move(p)), target_(target) {}

  Result<std::string> run() {
    bool start = false, end = false;
    if (!p_.empty() && p_[0] == '^') {
      start = true;
      p_.erase(p_.begin());
    }
    if (!p_.empty() && p_.back() == '$') {
      size_t slashes = 0;
      for (size_t i = p_.size() - 1; i-- > 0 && p_[i] == '\\';) ++slashes;
      if (slashes % 2 == 0) {
        end = true;
        p_.pop_back();
      }
    }
    RIDGE_ASSIGN_OR_RETURN(Piece body, alternatives(0));
    if (i_ < p_.size()) return fail("unbalanced ')'");
    if (target_ == RegexTarget::kText) return fmt::format("( {} )", body.expr);
    return fmt::format("{}( {} ){}", start ? "" : "j-char* ", body.expr, end ? "" : " j-char*");
  }

 private:
  Status fail(std::string_view what) const {
    return Status::usage(fmt::format("pattern: {} (at character {})", what, i_ + 1));
  }
  bool at(uint32_t c) const { return i_ < p_.size() && p_[i_] == c; }

  Result<Piece> alternatives(int depth) {
    if (depth > kMaxGroupDepth) return fail("groups nested too deeply");
    Piece out;
    for (;;) {
      RIDGE_ASSIGN_OR_RETURN(Piece s, sequence(depth));
      out.expr += (out.expr.empty() ? "" : " | ") + (s.expr.empty() ? std::string("\"\"") : s.expr);
      out.nullable = out.nullable || s.nullable;
      if (!at('|')) return out;
      ++i_;
    }
  }

  Result<Piece> sequence(int depth) {
    Piece out{"", true};
    while (i_ < p_.size() && !at('|') && !at(')')) {
      RIDGE_ASSIGN_OR_RETURN(Piece a, atom(depth));
      RIDGE_ASSIGN_OR_RETURN(a, quantifier(std::move(a)));
      out.expr += (out.expr.empty() ? "" : " ") + a.expr;
      out.nullable = out.nullable && a.nullable;
    }
    return out;
  }

  Result<Piece> quantifier(Piece a) {
    if (i_ >= p_.size()) return a;
    uint32_t lo = 0, hi = 0;
    bool unbounded = false;
    const uint32_t c = p_[i_];
    if (c == '*' || c == '+' || c == '?') {
      ++i_;
      lo = c == '+' ? 1 : 0;
      hi = c == '?' ? 1 : 0;
      unbounded = c != '?';
    } else if (c == '{') {
      const size_t save = i_++;
      auto number = [&](uint32_t* v) {
        const size_t s = i_;
        uint64_t n = 0;
        while (i_ < p_.size() && p_[i_] >= '0' && p_[i_] <= '9')
          n = std::min<uint64_t>(n * 10 + (p_[i_++] - '0'), 1u << 30);
        *v = static_cast<uint32_t>(n);
        return i_ > s;
      };
      bool ok = number(&lo);
      hi = lo;
      if (ok && at(',')) {
        ++i_;
        if (!number(&hi)) unbounded = true;
      }
      if (!ok || !at('}')) {  // not a quantifier: '{' is an ordinary character
        i_ = save;
        return a;
      }
      ++i_;
      if (!unbounded && hi < lo) return fail("quantifier {m,n} with n < m");
      if (lo > kMaxCount || (!unbounded && hi > kMaxCount)) {
        return fail(fmt::format("repetition count over {}", kMaxCount));
      }
    } else {
      return a;
    }
    if (at('?')) ++i_;  // lazy: same language
    if (at('*') || at('+') || at('?') || at('{')) return fail("multiple repeat");
    if (unbounded && a.nullable) return fail("repetition of an expression that can be empty");
    Piece out;
    out.nullable = a.nullable || lo == 0;
    out.expr = "( " + a.expr + " )";
    if (unbounded) {
      out.expr += lo == 0 ? "*" : lo == 1 ? "+" : fmt::format("{{{},}}", lo);
    } else {
      out.expr += fmt::format("{{{},{}}}", lo, hi);
    }
    return out;
  }

  // \d \w \s (as ASCII subsets of what Python and ECMA accept); false if c is not one.
  static bool class_escape(uint32_t c, Ranges* r) {
    if (c == 'd')
      *r = {{'0', '9'}};
    else if (c == 'w')
      *r = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    else if (c == 's')
      *r = {{'\t', '\n'}, {'\r', '\r'}, {' ', ' '}};
    else
      return false;
    return true;
  }

  // After a backslash: one character (into *cp) or a class (into *r). i_ is past the escape.
  Status escape(uint32_t* cp, Ranges* r, bool* is_class) {
    if (i_ >= p_.size()) return fail("pattern ends with a backslash");
    const uint32_t c = p_[i_++];
    *is_class = class_escape(c, r);
    if (*is_class) return ok_status();
    auto hex = [&](int n) -> Status {
      uint32_t v = 0;
      for (int k = 0; k < n; ++k) {
        if (i_ >= p_.size()) return fail("truncated escape");
        const uint32_t h = p_[i_++];
        uint32_t d = 0;
        if (h >= '0' && h <= '9')
          d = h - '0';
        else if (h >= 'a' && h <= 'f')
          d = h - 'a' + 10;
        else if (h >= 'A' && h <= 'F')
          d = h - 'A' + 10;
        else
          return fail("bad hex escape");
        v = v * 16 + d;
      }
      *cp = v;
      return ok_status();
    };
    switch (c) {
      case 'n':
        *cp = '\n';
        return ok_status();
      case 't':
        *cp = '\t';
        return ok_status();
      case 'r':
        *cp = '\r';
        return ok_status();
      case 'f':
        *cp = '\f';
        return ok_status();
      case 'v':
        *cp = '\v';
        return ok_status();
      case 'x':
        return hex(2);
      case 'u':
        return hex(4);
      case 'D':
      case 'W':
      case 'S':
        return fail("negated class escapes (\\D \\W \\S) are not supported");
      case 'b':
      case 'B':
        return fail("word boundaries (\\b \\B) are not supported");
      case 'k':
        return fail("backreferences are not supported");
      default:
        break;
    }
    if (c >= '0' && c <= '9') return fail("backreferences are not supported");
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      return fail(fmt::format("unknown escape '\\{}'", static_cast<char>(c)));
    }
    *cp = c;  // an escaped punctuation character stands for itself
    return ok_status();
  }

  Result<Piece> char_class() {
    ++i_;  // '['
    const bool negated = at('^');
    if (negated) ++i_;
    if (at(']')) return fail("empty class or ']' first in a class (escape it as '\\]')");
    Ranges r;
    for (;;) {
      if (i_ >= p_.size()) return fail("unterminated character class");
      if (at(']')) {
        ++i_;
        break;
      }
      uint32_t lo = 0;
      if (at('\\')) {
        ++i_;
        Ranges cls;
        bool is_class = false;
        RIDGE_RETURN_IF_ERROR(escape(&lo, &cls, &is_class));
        if (is_class) {
          r.insert(r.end(), cls.begin(), cls.end());
          continue;
        }
      } else {
        if (at('[')) return fail("nested classes are not supported");
        lo = p_[i_++];
      }
      uint32_t hi = lo;
      if (at('-') && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        if (at('\\')) {
          ++i_;
          Ranges cls;
          bool is_class = false;
          RIDGE_RETURN_IF_ERROR(escape(&hi, &cls, &is_class));
          if (is_class) return fail("a class escape cannot end a range");
        } else {
          hi = p_[i_++];
        }
        if (hi < lo) return fail("range out of order in class");
      }
      r.emplace_back(lo, hi);
    }
    return class_piece(negated ? complement(r) : normalize(r));
  }

  Result<Piece> class_piece(const Ranges& r) {
    const std::string e = target_ == RegexTarget::kText ? text_class_expr(r) : json_class_expr(r);
    if (e.empty()) return fail("class matches no character that can be generated");
    return Piece{e, false};
  }

  Result<Piece> atom(int depth) {
    const uint32_t c = p_[i_];
    if (c == '(') {
      ++i_;
      if (at('?')) {
        ++i_;
        if (at(':')) {
          ++i_;
        } else if (at('<') && i_ + 1 < p_.size() && p_[i_ + 1] != '=' && p_[i_ + 1] != '!') {
          while (i_ < p_.size() && !at('>')) ++i_;  // a named group is a group
          if (!at('>')) return fail("unterminated group name");
          ++i_;
        } else if (at('=') || at('!') || at('<')) {
          return fail("lookaround is not supported");
        } else {
          return fail("inline flags and other (?...) groups are not supported");
        }
      }
      RIDGE_ASSIGN_OR_RETURN(Piece inner, alternatives(depth + 1));
      if (!at(')')) return fail("unclosed '('");
      ++i_;
      return Piece{"( " + (inner.expr.empty() ? std::string("\"\"") : inner.expr) + " )",
                   inner.nullable};
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++i_;
      return class_piece(complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
    }
    if (c == '^' || c == '$') return fail("anchors are supported only at the start and end");
    if (c == '*' || c == '+' || c == '?') return fail("nothing to repeat");
    ++i_;
    uint32_t cp = c;
    if (c == '\\') {
      Ranges cls;
      bool is_class = false;
      RIDGE_RETURN_IF_ERROR(escape(&cp, &cls, &is_class));
      if (is_class) return class_piece(cls);
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) return fail("surrogate code points are not supported");
    return Piece{target_ == RegexTarget::kText ? text_char_expr(cp) : json_char_expr(cp), false};
  }

  std::vector<uint32_t> p_;
  RegexTarget target_;
  size_t i_ = 0;
};

}  // namespace

Result<std::string> regex_to_gbnf(std::string_view pattern, RegexTarget target) {
  std::vector<uint32_t> cps;
  if (!decode_utf8(pattern, &cps)) return Status::usage("pattern: invalid UTF-8");
  return RegexConverter(std::move(cps), target).run();
}

}  // namespace ridge::grammar::detail
