// Unit decoders of the 256-value formats (Q2_K .. Q6_K, IQ4_XS: unit u is values 32 (u % 8) ..
// 32 (u % 8) + 31 of super-block u / 8) and of IQ4_NL (unit u is block u). Byte layouts as
// kernels/quant/blocks.h; float operations in the order of kernels/quant/dequantize.cpp.
// Included by backend/cuda/quant_blocks.h only (uses its helpers); include that instead.
#pragma once

#ifndef RIDGE_HD
#error "include backend/cuda/quant_blocks.h, not quant_blocks_k.h"
#endif

namespace ridge::backend::cuda {

// kIq4NlValues[q] (kernels/quant/blocks.h) for q < 16, without a memory table: the 16 int8
// values packed 4 to a word, little-endian.
RIDGE_HD int iq4_value(uint32_t q) {
  const uint32_t w = q < 8 ? (q < 4 ? 0xBFAD9881u : 0xF6EADDCFu) : (q < 12 ? 0x26190D01u : 0x71594535u);
  return static_cast<int8_t>(static_cast<uint8_t>(w >> (8 * (q & 3))));
}

// 32 IQ4_NL table values of the 16 bytes qs under scale d: x = d * value.
RIDGE_HD void iq4_values(const uint32_t (&qs)[4], float d, float* out) {
  RIDGE_UNROLL
  for (int j = 0; j < 16; ++j) {
    const uint32_t q = byte_of(qs, j);
    out[j] = rn_mul(d, static_cast<float>(iq4_value(q & 15)));
    out[j + 16] = rn_mul(d, static_cast<float>(iq4_value(q >> 4)));
  }
}

// IQ4_NL (18 bytes: d, qs[16]).
RIDGE_HD void unit_iq4_nl(const uint8_t* row, int64_t u, float* out) {
  const uint8_t* b = row + u * 18;
  uint32_t qs[4];
  load_words(b + 2, qs);
  iq4_values(qs, fp16_bits_to_float(load_u16(b)), out);
}

// Q2_K (84 bytes: scales[16] at 0, qs[64] at 16, d at 80, dmin at 82). Unit v = 4h + j: element
// 16s + l has q = bits 2j..2j+1 of qs[32h + 16s + l] and scale byte sc = scales[8h + 2j + s];
// x = (d * (sc & 15)) * q - dmin * (sc >> 4).
RIDGE_HD void unit_q2_k(const uint8_t* row, int64_t u, float* out) {
  const uint8_t* b = row + (u >> 3) * 84;
  const int v = static_cast<int>(u & 7), h = v >> 2, j = v & 3;
  const float d = fp16_bits_to_float(load_u16(b + 80));
  const float dmin = fp16_bits_to_float(load_u16(b + 82));
  float dl[2], ml[2];
  RIDGE_UNROLL
  for (int s = 0; s < 2; ++s) {
    const uint32_t sc = load_u8(b + 8 * h + 2 * j + s);
    dl[s] = rn_mul(d, static_cast<float>(sc & 15));
    ml[s] = rn_mul(dmin, static_cast<float>(sc >> 4));
  }
  uint32_t qs[8];
  load_words(b + 16 + 32 * h, qs);
  RIDGE_UNROLL
  for (int e = 0; e < 32; ++e) {
    const uint32_t q = (byte_of(qs, e) >> (2 * j)) & 3;
    out[e] = rn_sub(rn_mul(dl[e / 16], static_cast<float>(q)), ml[e / 16]);
  }
}

// Signed 6-bit scale i < 16 of Q3_K from its 12 scale bytes at s (as unpack_scale_q3_k).
RIDGE_HD int q3_k_scale(const uint8_t* s, int i) {
  const uint32_t lo = (load_u8(s + i % 8) >> (4 * (i / 8))) & 15;
  const uint32_t hi = (load_u8(s + 8 + i % 4) >> (2 * (i / 4))) & 3;
  return static_cast<int>(lo | (hi << 4)) - 32;
}

// Q3_K (110 bytes: hmask[32] at 0, qs[64] at 32, scales[12] at 96, d at 108). Unit v = 4h + j:
// element 16s + l has low bits q as Q2_K's (qs + 32h), high bit = bit 4h + j of
// hmask[16s + l], scale i = 8h + 2j + s; x = (d * scale_i) * (q - (high bit ? 0 : 4)).
RIDGE_HD void unit_q3_k(const uint8_t* row, int64_t u, float* out) {
  const uint8_t* b = row + (u >> 3) * 110;
  const int v = static_cast<int>(u & 7), h = v >> 2, j = v & 3;
  const float d = fp16_bits_to_float(load_u16(b + 108));
  float dl[2];
  RIDGE_UNROLL
  for (int s = 0; s < 2; ++s) dl[s] = rn_mul(d, static_cast<float>(q3_k_scale(b + 96, 8 * h + 2 * j + s)));
  uint32_t hm[8], qs[8];
  load_words(b, hm);
  load_words(b + 32 + 32 * h, qs);
  const int bit = 4 * h + j;
  RIDGE_UNROLL
  for (int e = 0; e < 32; ++e) {
    const int q = static_cast<int>((byte_of(qs, e) >> (2 * j)) & 3);
    const int hb = static_cast<int>((byte_of(hm, e) >> bit) & 1);
    out[e] = rn_mul(dl[e / 16], static_cast<float>(q - (hb ? 0 : 4)));
  }
}

// Q4_K (144 bytes: d, dmin, scales[12] at 4, qs[128] at 16) and Q5_K (176 bytes: d, dmin,
// scales[12] at 4, qh[32] at 16, qs[128] at 48). Unit v = 2g + hi: element l has q = nibble hi of
// qs[32g + l] (Q5_K: plus bit v of qh[l] as bit 4); 6-bit (sc, mn) pair v as unpack_scale_min_k4;
// x = (d * sc) * q - dmin * mn.
template <bool kFiveBit>
RIDGE_HD void unit_q45_k(const uint8_t* row, int64_t u, float* out) {
  const uint8_t* b = row + (u >> 3) * (kFiveBit ? 176 : 144);
  const int v = static_cast<int>(u & 7), g = v >> 1, hi = v & 1;
  const float d = fp16_bits_to_float(load_u16(b));
  const float dmin = fp16_bits_to_float(load_u16(b + 2));
  // Branch-free unpack (lanes hold different v): bytes s[v], s[v + 4], s[(v + 4) & 7] (= s[v - 4]
  // for v >= 4).
  const uint8_t* s = b + 4;
  const uint32_t s_v = load_u8(s + v), s_v4 = load_u8(s + v + 4), s_vm4 = load_u8(s + ((v + 4) & 7));
  const uint32_t sc = v < 4 ? (s_v & 63) : ((s_v4 & 15) | ((s_vm4 >> 6) << 4));
  const uint32_t mn = v < 4 ? (s_v4 & 63) : ((s_v4 >> 4) | ((s_v >> 6) << 4));
  const float dl = rn_mul(d, static_cast<float>(sc));
  const float ml = rn_mul(dmin, static_cast<float>(mn));
  uint32_t qs[8];
  load_words(b + (kFiveBit ? 48 : 16) + 32 * g, qs);
  uint32_t qh[8] = {};
  if constexpr (kFiveBit) load_words(b + 16, qh);
  RIDGE_UNROLL
  for (int e = 0; e < 32; ++e) {
    uint32_t q = (byte_of(qs, e) >> (4 * hi)) & 15;
    if constexpr (kFiveBit) q |= ((byte_of(qh, e) >> v) & 1) << 4;
    out[e] = rn_sub(rn_mul(dl, static_cast<float>(q)), ml);
  }
}

// Q6_K (210 bytes: ql[128] at 0, qh[64] at 128, scales[16] int8 at 192, d at 208). Unit
// v = 4h + k: element l has low nibble (k >= 2: high nibble) of ql[64h + 32(k & 1) + l], bits
// 4..5 = bits 2k..2k+1 of qh[32h + l], scale sc = scales[8h + 2k + l / 16];
// x = (d * sc) * (q - 32).
RIDGE_HD void unit_q6_k(const uint8_t* row, int64_t u, float* out) {
  const uint8_t* b = row + (u >> 3) * 210;
  const int v = static_cast<int>(u & 7), h = v >> 2, k = v & 3;
  const float d = fp16_bits_to_float(load_u16(b + 208));
  float dl[2];
  RIDGE_UNROLL
  for (int s = 0; s < 2; ++s) {
    const int sc = static_cast<int8_t>(static_cast<uint8_t>(load_u8(b + 192 + 8 * h + 2 * k + s)));
    dl[s] = rn_mul(d, static_cast<float>(sc));
  }
  uint32_t ql[8], qh[8];
  load_words(b + 64 * h + 32 * (k & 1), ql);
  load_words(b + 128 + 32 * h, qh);
  RIDGE_UNROLL
  for (int e = 0; e < 32; ++e) {
    const uint32_t lo = (byte_of(ql, e) >> (4 * (k >> 1))) & 15;
    const uint32_t hb = (byte_of(qh, e) >> (2 * k)) & 3;
    out[e] = rn_mul(dl[e / 16], static_cast<float>(static_cast<int>(lo | (hb << 4)) - 32));
  }
}

// IQ4_XS (136 bytes: d, scales_h at 2, scales_l[4] at 4, qs[128] at 8). Unit ib: IQ4_NL's 16
// bytes at qs + 16 ib under dl = d * (ls - 32), ls = nibble ib % 2 of scales_l[ib / 2] | bits
// 2ib..2ib+1 of scales_h << 4.
RIDGE_HD void unit_iq4_xs(const uint8_t* row, int64_t u, float* out) {
  const uint8_t* b = row + (u >> 3) * 136;
  const int ib = static_cast<int>(u & 7);
  const float d = fp16_bits_to_float(load_u16(b));
  const uint32_t ls = ((load_u8(b + 4 + ib / 2) >> (4 * (ib % 2))) & 15) |
                      (((load_u16(b + 2) >> (2 * ib)) & 3) << 4);
  uint32_t qs[4];
  load_words(b + 8 + 16 * ib, qs);
  iq4_values(qs, rn_mul(d, static_cast<float>(static_cast<int>(ls) - 32)), out);
}

}  // namespace ridge::backend::cuda
