// Incremental UTF-8 decoding that accepts only well-formed sequences (no overlongs, surrogates
// or code points past U+10FFFF) and knows, mid-character, which code points may still follow.
#pragma once

#include <cstdint>
#include <string>

namespace ridge::grammar {

struct Utf8Partial {
  uint32_t cp = 0;                 // bits decoded so far
  uint8_t need = 0;                // continuation bytes still expected (0: between characters)
  uint8_t len = 0;                 // bytes consumed of the current character
  uint8_t lo2 = 0x80, hi2 = 0xBF;  // allowed range of the next continuation byte
  bool operator==(const Utf8Partial&) const = default;
};

enum class Utf8Step { kInvalid, kPartial, kComplete };

// Feeds one byte. kComplete: *cp_out is the finished code point and p is reset.
inline Utf8Step utf8_feed(Utf8Partial& p, uint8_t b, uint32_t* cp_out) {
  if (p.need == 0) {
    if (b < 0x80) {
      *cp_out = b;
      return Utf8Step::kComplete;
    }
    p.lo2 = 0x80;
    p.hi2 = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      p.cp = b & 0x1Fu;
      p.need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      p.cp = b & 0x0Fu;
      p.need = 2;
      if (b == 0xE0) p.lo2 = 0xA0;
      if (b == 0xED) p.hi2 = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      p.cp = b & 0x07u;
      p.need = 3;
      if (b == 0xF0) p.lo2 = 0x90;
      if (b == 0xF4) p.hi2 = 0x8F;
    } else {
      return Utf8Step::kInvalid;
    }
    p.len = 1;
    return Utf8Step::kPartial;
  }
  if (b < p.lo2 || b > p.hi2) return Utf8Step::kInvalid;
  p.lo2 = 0x80;
  p.hi2 = 0xBF;
  p.cp = (p.cp << 6) | (b & 0x3Fu);
  ++p.len;
  if (--p.need == 0) {
    *cp_out = p.cp;
    p = Utf8Partial{};
    return Utf8Step::kComplete;
  }
  return Utf8Step::kPartial;
}

// The range of code points that can complete a partial character (p.need > 0).
inline void utf8_completions(const Utf8Partial& p, uint32_t* lo, uint32_t* hi) {
  const unsigned shift = 6u * p.need;
  uint32_t first_lo = p.lo2 & 0x3Fu, first_hi = p.hi2 & 0x3Fu;
  const unsigned rest = 6u * (p.need - 1u);
  *lo = (p.cp << shift) | (first_lo << rest);
  *hi = (p.cp << shift) | (first_hi << rest) | ((1u << rest) - 1u);
}

// Appends the UTF-8 encoding of a Unicode scalar value.
inline void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace ridge::grammar
