// Byte layouts of the GGUF/ggml quantized blocks (ggml-common.h is the authority; these structs
// must match it byte for byte, which the static_asserts and the decode tests pin down).
//
// Conventions shared by every format:
//  - fp16 fields are IEEE half, little-endian, stored as uint16_t (see tensor/fp16.h).
//  - Legacy formats (Q4_0 .. Q8_1) have 32-element blocks; element j < 16 sits in the low nibble
//    of qs[j], element j + 16 in its high nibble.
//  - K formats have 256-element super-blocks split into 16 or 8 sub-blocks, each with a small
//    integer scale (and min) that is itself scaled by the fp16 super-block d (dmin).
// Structs and constant tables only, no functions: the ISA-flagged kernel files include it (see
// docs/kernels.md).
#pragma once

#include <array>
#include <cstdint>

namespace ridge::kernels {

inline constexpr int kQk = 32;    // legacy block size
inline constexpr int kQkK = 256;  // K super-block size

// x = d * (q - 8), q in [0, 15]
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQk / 2];
};
// x = d * q + m, q in [0, 15]
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQk / 2];
};
// x = d * (q - 16), q in [0, 31]; bit j of the little-endian uint32 qh is bit 4 of element j.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQk / 2];
};
// x = d * q + m, q in [0, 31]; qh as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQk / 2];
};
// x = d * q, q in [-127, 127] (ggml never writes -128, but decodes it)
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQk];
};
// Activation-side: s = d * sum(qs), so dots with Q4_1/Q5_1 can apply the min in one multiply.
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kQk];
};

// 16 sub-blocks of 16: x = d * (scales[i] & 15) * q - dmin * (scales[i] >> 4), q in [0, 3].
// Element e = 128*h + 32*j + 16*s + l (h < 2, j < 4, s < 2, l < 16) is bits 2j..2j+1 of
// qs[32*h + 16*s + l] and uses scales[8*h + 2*j + s].
struct BlockQ2_K {
  uint8_t scales[kQkK / 16];
  uint8_t qs[kQkK / 4];
  uint16_t d;
  uint16_t dmin;
};
// 16 sub-blocks of 16: x = d * (sc[i] - 32) * (q - 4 * !hbit), q in [0, 3] from qs as in Q2_K,
// hbit = bit (4h + j) of hmask[16*s + l]. Scale i (6 bits) = low nibble
// (scales[i % 8] >> 4 * (i / 8)) | two high bits (scales[8 + i % 4] >> 2 * (i / 4)) << 4.
struct BlockQ3_K {
  uint8_t hmask[kQkK / 8];
  uint8_t qs[kQkK / 4];
  uint8_t scales[12];
  uint16_t d;
};
// 8 sub-blocks of 32: x = d * sc[i] * q - dmin * mn[i], q in [0, 15]; (sc, mn) 6-bit pairs packed
// in 12 bytes (see kernels/quant/scale_packing.h). Element e = 64*g + 32*hi + l is nibble `hi` of
// qs[32*g + l] and uses sub-block 2*g + hi.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQkK / 2];
};
// As Q4_K with a fifth bit: bit (2*g + hi) of qh[l] is bit 4 of element 64*g + 32*hi + l.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQkK / 8];
  uint8_t qs[kQkK / 2];
};
// 16 sub-blocks of 16: x = d * scales[i] * (q - 32), q in [0, 63]. Element
// e = 128*h + 32*k + l (k < 4, l < 32): low nibble of ql[64*h + l + 32*(k & 1)] (high nibble when
// k >= 2), high two bits = bits 2k..2k+1 of qh[32*h + l]; scale index 8*h + 2*k + l / 16.
struct BlockQ6_K {
  uint8_t ql[kQkK / 2];
  uint8_t qh[kQkK / 4];
  int8_t scales[kQkK / 16];
  uint16_t d;
};
// Activation-side for K dots: x = d * q, bsums[i] = sum of qs[16 i .. 16 i + 15].
struct BlockQ8_K {
  float d;
  int8_t qs[kQkK];
  int16_t bsums[kQkK / 16];
};

// MXFP4 (OCP Microscaling Formats v1.0: 32 E2M1 elements sharing one E8M0 scale; ggml type 39).
// e is the E8M0 exponent byte, scale 2^(e - 127). Code q (4 bits: sign, 2 exponent bits, 1
// mantissa bit) of element j < 16 is the low nibble of qs[j], of element j + 16 the high nibble.
// As ggml, the E2M1 values are kept doubled, as integers (kMxfp4Values[q] = 2 * E2M1(q)), and the
// scale halved: x = kMxfp4Values[q] * 2^(e - 128), for every e (0 and 1 give the subnormal
// 2^-128 and 2^-127; 255, NaN in the spec, is 2^127 as in ggml). Code 8 (E2M1 -0) decodes to +0.
struct BlockMxfp4 {
  uint8_t e;
  uint8_t qs[kQk / 2];
};
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
// The same values shifted to unsigned (u = value + kMxfp4Offset, 0..24), the unsigned operand
// the SIMD kernels look up (vpshufb) and multiply; their integer sums start at -12 * sum(x_b).
inline constexpr int32_t kMxfp4Offset = 12;
// A 4-bit table's values plus `offset`, as the unsigned bytes the SIMD kernels look up.
inline constexpr std::array<uint8_t, 16> shifted_table(const int8_t (&values)[16], int32_t offset) {
  std::array<uint8_t, 16> t{};
  for (int q = 0; q < 16; ++q) t[q] = static_cast<uint8_t>(values[q] + offset);
  return t;
}
alignas(16) inline constexpr std::array<uint8_t, 16> kMxfp4ValuesU = shifted_table(kMxfp4Values, kMxfp4Offset);

// IQ4_NL (ggml type 20): 32 elements, a fp16 scale d and 4-bit indices into a fixed non-linear
// table, x = d * kIq4NlValues[q]; element j < 16 in the low nibble of qs[j], j + 16 in the high
// (Q4_0's layout with a table lookup for q - 8).
struct BlockIq4Nl {
  uint16_t d;
  uint8_t qs[kQk / 2];
};
inline constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
// Shifted to unsigned for the VNNI kernels (u = value + 128, 1..241; their sums start at
// -128 * sum(x_b)).
inline constexpr int32_t kIq4NlOffset = 128;
alignas(16) inline constexpr std::array<uint8_t, 16> kIq4NlValuesU = shifted_table(kIq4NlValues, kIq4NlOffset);

// IQ4_XS (ggml type 23): 256 elements in 8 sub-blocks of 32, each IQ4_NL's 16 qs bytes with a
// 6-bit scale ls (low 4 bits in scales_l, nibble ib % 2 of byte ib / 2; high 2 bits in scales_h,
// bits 2 ib and 2 ib + 1): x = d * (ls - 32) * kIq4NlValues[q].
struct BlockIq4Xs {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQkK / 64];
  uint8_t qs[kQkK / 2];
};
static_assert(sizeof(BlockIq4Xs) == 136);
// Sub-block ib's 6-bit scale.
inline int iq4_xs_scale(const BlockIq4Xs& b, int ib) {
  return ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | (((b.scales_h >> (2 * ib)) & 3) << 4);
}

static_assert(sizeof(BlockIq4Nl) == 18);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockMxfp4) == 17);

}  // namespace ridge::kernels
