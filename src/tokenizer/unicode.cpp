#include "tokenizer/unicode.h"

namespace ridge::tokenizer {

namespace {
bool is_cont(std::string_view s, size_t i) {
  return i < s.size() && (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80;
}
uint32_t byte_at(std::string_view s, size_t i) { return static_cast<uint8_t>(s[i]); }
}  // namespace

uint32_t decode_utf8_lenient(std::string_view s, size_t* pos) {
  const size_t i = *pos;
  const uint32_t b0 = byte_at(s, i);
  if (b0 < 0x80) {
    *pos = i + 1;
    return b0;
  }
  // Same acceptance rules as llama.cpp's unicode_cpt_from_utf8: lead bits only, no overlong
  // or surrogate checks. Lead bytes F5..F7 would decode above U+10FFFF, which llama.cpp cannot
  // re-encode (it throws); we treat them as invalid bytes instead.
  if ((b0 & 0xE0) == 0xC0 && is_cont(s, i + 1)) {
    *pos = i + 2;
    return ((b0 & 0x1F) << 6) | (byte_at(s, i + 1) & 0x3F);
  }
  if ((b0 & 0xF0) == 0xE0 && is_cont(s, i + 1) && is_cont(s, i + 2)) {
    *pos = i + 3;
    return ((b0 & 0x0F) << 12) | ((byte_at(s, i + 1) & 0x3F) << 6) | (byte_at(s, i + 2) & 0x3F);
  }
  if ((b0 & 0xF8) == 0xF0 && is_cont(s, i + 1) && is_cont(s, i + 2) && is_cont(s, i + 3)) {
    const uint32_t cpt = ((b0 & 0x07) << 18) | ((byte_at(s, i + 1) & 0x3F) << 12) |
                         ((byte_at(s, i + 2) & 0x3F) << 6) | (byte_at(s, i + 3) & 0x3F);
    if (cpt <= 0x10FFFF) {
      *pos = i + 4;
      return cpt;
    }
  }
  *pos = i + 1;
  return kReplacementChar;
}

void append_utf8(std::string* out, uint32_t cpt) {
  if (cpt < 0x80) {
    out->push_back(static_cast<char>(cpt));
  } else if (cpt < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out->push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  }
}

Utf8Prefix scan_utf8(std::string_view s) {
  Utf8Prefix r;
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const uint32_t c = byte_at(s, i);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (strict UTF-8)
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      r.valid_len = i;
      r.invalid_len = 1;
      return r;
    }
    size_t k = 1;
    for (; k < len && i + k < n; ++k) {
      const uint32_t cc = byte_at(s, i + k);
      const bool ok = (k == 1) ? (cc >= lo && cc <= hi) : ((cc & 0xC0) == 0x80);
      if (!ok) {
        r.valid_len = i;
        r.invalid_len = k;  // the lead and the continuation bytes before the bad one
        return r;
      }
    }
    if (k < len) {  // ran out of bytes: could still complete
      r.valid_len = i;
      r.incomplete = true;
      return r;
    }
    i += len;
  }
  r.valid_len = n;
  return r;
}

ByteUnicodeMap::ByteUnicodeMap() {
  from_cpt_.fill(-1);
  uint32_t n = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    to_cpt_[b] = printable ? b : 256 + n++;
    from_cpt_[to_cpt_[b]] = static_cast<int16_t>(b);
  }
}

std::string ByteUnicodeMap::encode(std::string_view raw) const {
  std::string out;
  out.reserve(raw.size() * 2);
  for (char c : raw) append_utf8(&out, to_cpt_[static_cast<uint8_t>(c)]);
  return out;
}

bool ByteUnicodeMap::decode(std::string_view text, std::string* raw) const {
  raw->clear();
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t before = pos;
    const uint32_t cpt = decode_utf8_lenient(text, &pos);
    const int b = cpt_to_byte(cpt);
    if (b < 0 || (cpt == kReplacementChar && pos == before + 1)) return false;
    raw->push_back(static_cast<char>(b));
  }
  return true;
}

}  // namespace ridge::tokenizer
