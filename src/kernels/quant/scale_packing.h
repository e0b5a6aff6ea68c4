// Packing of the small per-sub-block scales of the K formats (ISA-neutral code only: inline
// functions must not be included by the ISA-flagged kernel files).
#pragma once

#include <cstdint>

namespace ridge::kernels {

// The 6-bit (scale, min) pair of sub-block i < 8 from the 12-byte array of Q4_K/Q5_K:
// i < 4: sc = s[i] & 63, mn = s[i + 4] & 63;
// i >= 4: low nibbles in s[i + 4], high two bits in the top bits of s[i - 4] (sc) / s[i] (mn).
inline void unpack_scale_min_k4(const uint8_t* s, int i, uint8_t* sc, uint8_t* mn) {
  if (i < 4) {
    *sc = s[i] & 63;
    *mn = s[i + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((s[i + 4] & 0x0f) | ((s[i - 4] >> 6) << 4));
    *mn = static_cast<uint8_t>((s[i + 4] >> 4) | ((s[i] >> 6) << 4));
  }
}

// Inverse of unpack_scale_min_k4 for 8 pairs of values < 64.
inline void pack_scale_min_k4(const uint8_t* sc, const uint8_t* mn, uint8_t* s) {
  for (int i = 0; i < 4; ++i) {
    s[i] = static_cast<uint8_t>(sc[i] | ((sc[i + 4] >> 4) << 6));
    s[i + 4] = static_cast<uint8_t>(mn[i] | ((mn[i + 4] >> 4) << 6));
    s[i + 8] = static_cast<uint8_t>((sc[i + 4] & 0x0f) | ((mn[i + 4] & 0x0f) << 4));
  }
}

// Signed 6-bit scale i < 16 of Q3_K (stored with a +32 bias).
inline int unpack_scale_q3_k(const uint8_t* s, int i) {
  const int lo = (s[i % 8] >> (4 * (i / 8))) & 0x0f;
  const int hi = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
  return (lo | (hi << 4)) - 32;
}

// Inverse of unpack_scale_q3_k for 16 biased values in [0, 63].
inline void pack_scales_q3_k(const uint8_t* biased, uint8_t* s) {
  for (int i = 0; i < 12; ++i) s[i] = 0;
  for (int i = 0; i < 16; ++i) {
    s[i % 8] |= static_cast<uint8_t>((biased[i] & 0x0f) << (4 * (i / 8)));
    s[8 + i % 4] |= static_cast<uint8_t>((biased[i] >> 4) << (2 * (i / 4)));
  }
}

}  // namespace ridge::kernels
