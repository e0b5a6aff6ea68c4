#include "chat/jinja/tstring.h"

namespace ridge::chat::jinja {

TString::TString(std::string str, bool literal) : s(std::move(str)) {
  if (literal && !s.empty()) spans.emplace_back(0, s.size());
}

void TString::add_span(size_t b, size_t e) {
  if (b >= e) return;
  if (!spans.empty() && spans.back().second >= b) {
    if (e > spans.back().second) spans.back().second = e;
    return;
  }
  spans.emplace_back(b, e);
}

void TString::append(const TString& o) {
  size_t base = s.size();
  s += o.s;
  for (const auto& [b, e] : o.spans) add_span(base + b, base + e);
}

void TString::append_literal(std::string_view v) {
  size_t base = s.size();
  s += v;
  add_span(base, s.size());
}

TString TString::substr(size_t b, size_t e) const {
  TString out;
  if (e > s.size()) e = s.size();
  if (b >= e) return out;
  out.s = s.substr(b, e - b);
  for (const auto& [sb, se] : spans) {
    size_t lo = sb > b ? sb : b;
    size_t hi = se < e ? se : e;
    if (lo < hi) out.add_span(lo - b, hi - b);
  }
  return out;
}

uint32_t decode_cp(std::string_view s, size_t* pos) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  size_t i = *pos;
  uint8_t c = byte(i);
  if (c < 0x80) {
    *pos = i + 1;
    return c;
  }
  size_t len = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    len = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    cp = c & 0x07;
  }
  if (len == 0 || i + len > s.size()) {
    *pos = i + 1;
    return 0xDC00 + c;
  }
  for (size_t k = 1; k < len; ++k) {
    uint8_t d = byte(i + k);
    if ((d & 0xC0) != 0x80) {
      *pos = i + 1;
      return 0xDC00 + c;
    }
    cp = (cp << 6) | (d & 0x3F);
  }
  *pos = i + len;
  return cp;
}

void append_cp(std::string* out, uint32_t cp) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) {  // an escaped invalid byte
    out->push_back(static_cast<char>(cp - 0xDC00));
  } else if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::vector<size_t> cp_offsets(std::string_view s) {
  std::vector<size_t> offs;
  offs.reserve(s.size() + 1);
  size_t pos = 0;
  while (pos < s.size()) {
    offs.push_back(pos);
    decode_cp(s, &pos);
  }
  offs.push_back(s.size());
  return offs;
}

size_t cp_count(std::string_view s) {
  size_t n = 0, pos = 0;
  while (pos < s.size()) {
    decode_cp(s, &pos);
    ++n;
  }
  return n;
}

bool py_isspace(uint32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return true;
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

}  // namespace ridge::chat::jinja
