// Incremental JSON: the string writer and the minifier.
#include "chat/json_stream.h"

#include <cstring>

namespace ridge::chat {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
// Deeper arguments are refused (they are rendered again by recursive code).
constexpr size_t kMaxDepth = 256;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

void JsonStringWriter::control(unsigned char b, std::string& out) {
  switch (b) {
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    case '\b': out += "\\b"; return;
    case '\f': out += "\\f"; return;
    default: break;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\u00";
  out += kHex[b >> 4];
  out += kHex[b & 15];
}

void JsonStringWriter::flush(std::string& out) {
  if (need_ == 0) return;
  out += kReplacement;
  seq_.clear();
  need_ = 0;
  lo_ = 0x80;
  hi_ = 0xBF;
}

void JsonStringWriter::utf8(unsigned char b, std::string& out) {
  if (need_ > 0) {
    if (b >= lo_ && b <= hi_) {
      seq_ += static_cast<char>(b);
      lo_ = 0x80;
      hi_ = 0xBF;
      if (--need_ == 0) {
        out += seq_;
        seq_.clear();
      }
      return;
    }
    flush(out);  // the byte starts something else
  }
  int n = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 1;
  } else if (b == 0xE0) {
    n = 2;
    lo = 0xA0;
  } else if (b == 0xED) {
    n = 2;
    hi = 0x9F;
  } else if (b >= 0xE1 && b <= 0xEF) {
    n = 2;
  } else if (b == 0xF0) {
    n = 3;
    lo = 0x90;
  } else if (b >= 0xF1 && b <= 0xF3) {
    n = 3;
  } else if (b == 0xF4) {
    n = 3;
    hi = 0x8F;
  } else {
    out += kReplacement;
    return;
  }
  seq_.assign(1, static_cast<char>(b));
  need_ = n;
  lo_ = lo;
  hi_ = hi;
}

void JsonStringWriter::text(unsigned char b, std::string& out) {
  if (b >= 0x80) {
    utf8(b, out);
    return;
  }
  flush(out);
  if (b == '"' || b == '\\') {
    out += '\\';
    out += static_cast<char>(b);
  } else if (b < 0x20) {
    control(b, out);
  } else {
    out += static_cast<char>(b);
  }
}

JsonMinifier::Status JsonMinifier::feed(char ch) {
  if (error_ || st_ == St::kDone) return fail();
  switch (st_) {
    case St::kString: return string_char(static_cast<unsigned char>(ch));
    case St::kNumber: {
      if (number_char(ch)) return Status::kMore;
      if (!number_complete()) return fail();
      flush();
      if (after_value() == Status::kDone) return Status::kEnded;
      return feed(ch);  // the character after the number, in kAfter
    }
    case St::kLiteral:
      if (ch != lit_[lit_pos_]) return fail();
      held_ += ch;
      if (++lit_pos_ < lit_.size()) return Status::kMore;
      flush();
      return after_value();
    default: break;
  }
  if (is_space(ch)) return Status::kMore;
  ++significant_;
  switch (st_) {
    case St::kValue: return value_start(ch);
    case St::kKey:
      if (ch == '"') {
        held_ += '"';
        st_ = St::kString;
        key_ = true;
        return Status::kMore;
      }
      if (ch == '}' && allow_close_) return close(ch);
      return fail();
    case St::kColon:
      if (ch != ':') return fail();
      held_ += ':';
      st_ = St::kValue;
      allow_close_ = false;
      return Status::kMore;
    case St::kAfter:
      if (ch == ',') {
        held_ += ',';
        allow_close_ = false;
        st_ = stack_.back() == '{' ? St::kKey : St::kValue;
        return Status::kMore;
      }
      if (ch == (stack_.back() == '{' ? '}' : ']')) return close(ch);
      return fail();
    default: return fail();
  }
}

JsonMinifier::Status JsonMinifier::value_start(char c) {
  switch (c) {
    case '{':
    case '[':
      if (stack_.size() >= kMaxDepth) return fail();
      stack_.push_back(c);
      held_ += c;
      flush();
      st_ = c == '{' ? St::kKey : St::kValue;
      allow_close_ = true;
      return Status::kMore;
    case ']':
      if (allow_close_ && !stack_.empty() && stack_.back() == '[') return close(c);
      return fail();
    case '"':
      held_ += c;
      flush();
      st_ = St::kString;
      key_ = false;
      return Status::kMore;
    case 't': lit_ = "true"; break;
    case 'f': lit_ = "false"; break;
    case 'n': lit_ = "null"; break;
    default:
      if (c != '-' && (c < '0' || c > '9')) return fail();
      held_ += c;
      st_ = St::kNumber;
      num_ = c == '-' ? 0 : c == '0' ? 1 : 2;
      return Status::kMore;
  }
  held_ += c;
  lit_pos_ = 1;
  st_ = St::kLiteral;
  return Status::kMore;
}

// JSON's number grammar: 0 after '-', 1 a leading 0, 2 integer digits, 3 after '.', 4 fraction
// digits, 5 after 'e', 6 after the exponent's sign, 7 exponent digits.
bool JsonMinifier::number_char(char c) {
  const bool digit = c >= '0' && c <= '9';
  int next = -1;
  switch (num_) {
    case 0: next = c == '0' ? 1 : digit ? 2 : -1; break;
    case 1: next = c == '.' ? 3 : (c == 'e' || c == 'E') ? 5 : -1; break;
    case 2: next = digit ? 2 : c == '.' ? 3 : (c == 'e' || c == 'E') ? 5 : -1; break;
    case 3: next = digit ? 4 : -1; break;
    case 4: next = digit ? 4 : (c == 'e' || c == 'E') ? 5 : -1; break;
    case 5: next = (c == '+' || c == '-') ? 6 : digit ? 7 : -1; break;
    default: next = digit ? 7 : -1; break;
  }
  if (next < 0) return false;
  num_ = next;
  held_ += c;
  return true;
}

bool JsonMinifier::number_complete() const {
  return num_ == 1 || num_ == 2 || num_ == 4 || num_ == 7;
}

void JsonMinifier::resolve_high() {
  if (high_.empty()) return;
  held_ += "\\ufffd";
  high_.clear();
}

void JsonMinifier::unicode_escape() {
  int code = 0;
  for (size_t i = 2; i < 6; ++i) code = code * 16 + hex_value(esc_buf_[i]);
  if (code >= 0xD800 && code <= 0xDBFF) {
    resolve_high();
    high_ = esc_buf_;
  } else if (code >= 0xDC00 && code <= 0xDFFF) {
    if (high_.empty()) {
      held_ += "\\ufffd";
    } else {
      held_ += high_;
      held_ += esc_buf_;
      high_.clear();
    }
  } else {
    resolve_high();
    held_ += esc_buf_;
  }
}

JsonMinifier::Status JsonMinifier::string_char(unsigned char c) {
  if (esc_ == 1) {
    if (c == 'u') {
      esc_ = 2;
      esc_buf_ = "\\u";
      return Status::kMore;
    }
    if (c == 0 || std::strchr("\"\\/bfnrt", c) == nullptr) return fail();
    w_.flush(held_);
    resolve_high();
    held_ += '\\';
    held_ += static_cast<char>(c);
    esc_ = 0;
  } else if (esc_ >= 2) {
    if (hex_value(static_cast<char>(c)) < 0) return fail();
    esc_buf_ += static_cast<char>(c);
    if (++esc_ < 6) return Status::kMore;
    esc_ = 0;
    w_.flush(held_);
    unicode_escape();
  } else if (c == '\\') {
    esc_ = 1;
    return Status::kMore;
  } else if (c == '"') {
    w_.flush(held_);
    resolve_high();
    held_ += '"';
    if (key_) {
      st_ = St::kColon;
      return Status::kMore;
    }
    flush();
    return after_value();
  } else if (c >= 0x80) {
    resolve_high();
    w_.utf8(c, held_);
  } else {
    w_.flush(held_);
    resolve_high();
    if (c < 0x20) {
      JsonStringWriter::control(c, held_);  // invalid raw in JSON: escaped
    } else {
      held_ += static_cast<char>(c);
    }
  }
  if (!key_) flush();
  return Status::kMore;
}

JsonMinifier::Status JsonMinifier::close(char c) {
  stack_.pop_back();
  held_ += c;
  flush();
  return after_value();
}

JsonMinifier::Status JsonMinifier::after_value() {
  if (stack_.empty()) {
    st_ = St::kDone;
    return Status::kDone;
  }
  st_ = St::kAfter;
  return Status::kMore;
}

std::string JsonMinifier::closers() const {
  std::string s;
  if (st_ == St::kString && !key_) s += '"';
  for (auto it = stack_.rbegin(); it != stack_.rend(); ++it) s += *it == '{' ? '}' : ']';
  return s;
}

}  // namespace ridge::chat
