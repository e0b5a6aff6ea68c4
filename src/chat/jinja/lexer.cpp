#include "chat/jinja/lexer.h"

#include <fmt/format.h>

#include <cctype>

#include "chat/jinja/tstring.h"

namespace ridge::chat::jinja {

Status template_error(int line, std::string_view msg) {
  return Status::usage(fmt::format("chat template line {}: {}", line, msg));
}

namespace {

// Bounds the depth of the expression trees a tag can produce (their evaluation and destruction
// recurse); real chat templates stay far below.
constexpr size_t kMaxTagTokens = 4000;

int count_newlines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Python str.rstrip() (Unicode whitespace).
std::string_view rstrip_ws(std::string_view s) {
  std::vector<size_t> offs = cp_offsets(s);
  size_t end = s.size();
  for (size_t i = offs.size() - 1; i > 0; --i) {
    size_t pos = offs[i - 1];
    if (!py_isspace(decode_cp(s, &pos))) break;
    end = offs[i - 1];
  }
  return s.substr(0, end);
}

bool all_ws_nonempty(std::string_view s) {
  if (s.empty()) return false;
  size_t pos = 0;
  while (pos < s.size()) {
    if (!py_isspace(decode_cp(s, &pos))) return false;
  }
  return true;
}

size_t skip_ws(std::string_view s, size_t pos) {
  while (pos < s.size()) {
    size_t next = pos;
    if (!py_isspace(decode_cp(s, &next))) break;
    pos = next;
  }
  return pos;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {}

  Result<std::vector<Segment>> run() {
    while (pos_ < src_.size()) {
      size_t start = find_tag(pos_);
      if (start == std::string::npos) {
        std::string_view rest = std::string_view(src_).substr(pos_);
        emit_text(rest, count_newlines(rest));
        break;
      }
      char kind = src_[start + 1];
      size_t p = start + 2;
      char sign = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
      std::string_view text = std::string_view(src_).substr(pos_, start - pos_);
      size_t raw_end = kind == '%' ? raw_begin(p) : 0;
      emit_text(strip_before(text, sign, kind), count_newlines(text));
      pos_ = p;
      if (raw_end != 0) {
        RIDGE_RETURN_IF_ERROR(lex_raw(raw_end));
      } else if (kind == '#') {
        RIDGE_RETURN_IF_ERROR(lex_comment());
      } else {
        RIDGE_RETURN_IF_ERROR(lex_tag(kind == '%'));
      }
    }
    return std::move(out_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  std::string_view strip_before(std::string_view text, char sign, char kind) const {
    if (sign == '-') return rstrip_ws(text);
    if (sign != '+' && kind != '{') {  // lstrip_blocks
      size_t l_pos = text.rfind('\n');
      l_pos = l_pos == std::string_view::npos ? 0 : l_pos + 1;
      if ((l_pos > 0 || line_starting_) && all_ws_nonempty(text.substr(l_pos))) {
        return text.substr(0, l_pos);
      }
    }
    return text;
  }

  void emit_text(std::string_view text, int newlines) {
    if (!text.empty()) {
      if (!out_.empty() && out_.back().type == Segment::Type::kText) {
        out_.back().text += text;
      } else {
        Segment seg;
        seg.type = Segment::Type::kText;
        seg.text = std::string(text);
        seg.line = line_;
        out_.push_back(std::move(seg));
      }
    }
    line_ += newlines;
  }

  // Consumes the end of a tag: "-" strips following whitespace, plain block ends eat one newline.
  void finish_tag(size_t end_pos, char sign, bool trim_newline) {
    size_t p = end_pos;
    if (sign == '-') {
      p = skip_ws(src_, p);
    } else if (sign == 0 && trim_newline && p < src_.size() && src_[p] == '\n') {
      ++p;
    }
    std::string_view consumed = std::string_view(src_).substr(pos_, p - pos_);
    line_ += count_newlines(consumed);
    line_starting_ = !consumed.empty() ? consumed.back() == '\n' : false;
    pos_ = p;
  }

  // If "{%[-+] raw [-]%}" starts at the tag: the position after it (after "%}"), else 0.
  size_t raw_begin(size_t p) const {
    p = skip_ws(src_, p);
    if (src_.compare(p, 3, "raw") != 0) return 0;
    p += 3;
    size_t q = skip_ws(src_, p);
    if (src_.compare(q, 3, "-%}") == 0) return skip_ws(src_, q + 3);
    if (src_.compare(q, 2, "%}") == 0) return q + 2;
    return 0;
  }

  Status lex_raw(size_t body_start) {
    line_ += count_newlines(std::string_view(src_).substr(pos_, body_start - pos_));
    for (size_t i = body_start; i + 1 < src_.size(); ++i) {
      if (src_[i] != '{' || src_[i + 1] != '%') continue;
      size_t p = i + 2;
      char sign = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
      p = skip_ws(src_, p);
      if (src_.compare(p, 6, "endraw") != 0) continue;
      p = skip_ws(src_, p + 6);
      char end_sign = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) end_sign = src_[p++];
      if (src_.compare(p, 2, "%}") != 0) continue;
      std::string_view body = std::string_view(src_).substr(body_start, i - body_start);
      line_starting_ = false;
      emit_text(strip_before(body, sign, '%'), count_newlines(body));
      pos_ = i;
      finish_tag(p + 2, end_sign, true);
      return ok_status();
    }
    return template_error(line_, "missing end of raw directive");
  }

  Status lex_comment() {
    for (size_t i = pos_; i + 1 < src_.size(); ++i) {
      char c = src_[i];
      if ((c == '-' || c == '+') && src_.compare(i + 1, 2, "#}") == 0) {
        finish_tag(i + 3, c, true);
        return ok_status();
      }
      if (c == '#' && src_[i + 1] == '}') {
        finish_tag(i + 2, 0, true);
        return ok_status();
      }
    }
    return template_error(line_, "missing end of comment tag");
  }

  Status lex_tag(bool block) {
    Segment seg;
    seg.type = block ? Segment::Type::kStatement : Segment::Type::kPrint;
    seg.line = line_;
    std::string closers;
    size_t p = pos_;
    int line = line_;
    while (true) {
      if (p >= src_.size()) return template_error(seg.line, "unexpected end of template");
      if (closers.empty()) {
        size_t end = std::string::npos;
        char sign = 0;
        if (block) {
          if (src_.compare(p, 3, "-%}") == 0 || src_.compare(p, 3, "+%}") == 0) {
            sign = src_[p];
            end = p + 3;
          } else if (src_.compare(p, 2, "%}") == 0) {
            end = p + 2;
          }
        } else {
          if (src_.compare(p, 3, "-}}") == 0) {
            sign = '-';
            end = p + 3;
          } else if (src_.compare(p, 2, "}}") == 0) {
            end = p + 2;
          }
        }
        if (end != std::string::npos) {
          Token t;
          t.line = line;
          seg.tokens.push_back(std::move(t));
          out_.push_back(std::move(seg));
          finish_tag(end, sign == '+' ? '+' : sign, block);
          return ok_status();
        }
      }
      char c = src_[p];
      size_t ws = skip_ws(src_, p);
      if (ws != p) {
        line += count_newlines(std::string_view(src_).substr(p, ws - p));
        p = ws;
        continue;
      }
      Token t;
      t.line = line;
      if (std::isdigit(static_cast<unsigned char>(c))) {
        RIDGE_RETURN_IF_ERROR(lex_number(&p, &t));
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t b = p;
        while (p < src_.size() &&
               (std::isalnum(static_cast<unsigned char>(src_[p])) || src_[p] == '_')) {
          ++p;
        }
        t.type = Token::Type::kName;
        t.text = src_.substr(b, p - b);
      } else if (c == '\'' || c == '"') {
        RIDGE_RETURN_IF_ERROR(lex_string(&p, &t, &line));
      } else {
        static constexpr std::string_view kOps2[] = {"//", "**", "==", "!=", ">=", "<="};
        std::string op;
        for (auto o : kOps2) {
          if (src_.compare(p, 2, o) == 0) op = std::string(o);
        }
        if (op.empty()) {
          if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
            return template_error(line, fmt::format("unexpected char '{}'", c));
          }
          op = std::string(1, c);
        }
        if (op == "(") closers.push_back(')');
        if (op == "[") closers.push_back(']');
        if (op == "{") closers.push_back('}');
        if (op == ")" || op == "]" || op == "}") {
          if (closers.empty() || closers.back() != op[0]) {
            return template_error(line, fmt::format("unexpected '{}'", op));
          }
          closers.pop_back();
        }
        p += op.size();
        t.type = Token::Type::kOp;
        t.text = std::move(op);
      }
      seg.tokens.push_back(std::move(t));
      if (seg.tokens.size() > kMaxTagTokens) {
        return template_error(seg.line, "tag too long (more than 4000 tokens)");
      }
    }
  }

  Status lex_number(size_t* pp, Token* t) {
    size_t p = *pp;
    auto digits = [&](size_t q) {
      size_t b = q;
      while (q < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[q])) ||
                                 (src_[q] == '_' && q > b && q + 1 < src_.size() &&
                                  std::isdigit(static_cast<unsigned char>(src_[q + 1]))))) {
        ++q;
      }
      return q;
    };
    size_t q = digits(p);
    bool is_float = false;
    if (q + 1 < src_.size() && src_[q] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[q + 1]))) {
      q = digits(q + 1);
      is_float = true;
    }
    if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
      size_t r = q + 1;
      if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
      if (r < src_.size() && std::isdigit(static_cast<unsigned char>(src_[r]))) {
        q = digits(r);
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = p; i < q; ++i) {
      if (src_[i] != '_') text.push_back(src_[i]);
    }
    *pp = q;
    if (is_float) {
      t->type = Token::Type::kFloat;
      t->fval = std::strtod(text.c_str(), nullptr);
    } else {
      t->type = Token::Type::kInt;
      if (text.size() > 18) return template_error(t->line, "integer literal too large");
      t->ival = std::stoll(text);
    }
    return ok_status();
  }

  Status lex_string(size_t* pp, Token* t, int* line) {
    char quote = src_[*pp];
    size_t p = *pp + 1;
    std::string out;
    while (true) {
      if (p >= src_.size()) return template_error(t->line, "unterminated string");
      char c = src_[p];
      if (c == quote) break;
      if (c == '\n') ++*line;
      if (c != '\\' || p + 1 >= src_.size()) {
        out.push_back(c);
        ++p;
        continue;
      }
      char e = src_[p + 1];
      p += 2;
      auto hex = [&](int n) -> int64_t {
        if (p + n > src_.size()) return -1;
        int64_t v = 0;
        for (int k = 0; k < n; ++k) {
          char h = src_[p + k];
          if (!std::isxdigit(static_cast<unsigned char>(h))) return -1;
          v = v * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0'
                                                                    : (std::tolower(h) - 'a' + 10));
        }
        p += n;
        return v;
      };
      switch (e) {
        case '\n':
          ++*line;
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '\'':
          out.push_back('\'');
          break;
        case '"':
          out.push_back('"');
          break;
        case 'a':
          out.push_back('\a');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'v':
          out.push_back('\v');
          break;
        case 'x':
        case 'u':
        case 'U': {
          int64_t v = hex(e == 'x' ? 2 : (e == 'u' ? 4 : 8));
          if (v < 0 || v > 0x10FFFF) return template_error(t->line, "bad escape in string");
          append_cp(&out, static_cast<uint32_t>(v));
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++k) {
              v = v * 8 + static_cast<uint32_t>(src_[p++] - '0');
            }
            append_cp(&out, v);
          } else if (e == 'N') {
            return template_error(t->line, "unsupported \\N{...} escape in string");
          } else {
            out.push_back('\\');
            out.push_back(e);
            if (e == '\n') ++*line;
          }
      }
    }
    *pp = p + 1;
    t->type = Token::Type::kString;
    t->text = std::move(out);
    return ok_status();
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Segment> out_;
};

}  // namespace

Result<std::vector<Segment>> lex_template(std::string_view source) {
  std::string src;
  src.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      src.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      src.push_back(source[i]);
    }
  }
  if (!src.empty() && src.back() == '\n') src.pop_back();  // keep_trailing_newline=False
  return Lexer(std::move(src)).run();
}

std::string describe_token(const Token& t) {
  switch (t.type) {
    case Token::Type::kEnd:
      return "end of tag";
    case Token::Type::kString:
      return "string";
    case Token::Type::kInt:
    case Token::Type::kFloat:
      return "number";
    default:
      return "'" + t.text + "'";
  }
}

}  // namespace ridge::chat::jinja
