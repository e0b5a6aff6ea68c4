// The 256-element formats whose elements are read from codebooks or ternary digits: IQ2_XXS,
// IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M (ggml's grids, kernels/quant/iq_grids.h) and TQ1_0,
// TQ2_0. Byte layouts as ggml-common.h defines them; decoding as ggml-quants.c does.
//
// Every format here unpacks a super-block to one shape (GridBlock): a float scale d, 256 signed
// integer elements q and 16 odd integer sub-block scales ls (one per 16 elements; formats with a
// scale per 32 repeat it). The value of element e is then
//     x_e = d * ls[e / 16] * q_e * kUnit
// with kUnit the format's constant (1/8 for the IQ2 formats, 1/4 for IQ3_XXS, 1 for IQ3_S and the
// ternary formats). The IQ1 formats' shift of +-1/8 per group of 8 (ggml's IQ1S_DELTA) is folded
// into q: q = 8 g + delta for a grid value g in {-1, 0, 1} and delta in {-1, +1}, kUnit 1/8.
//
// Dot with Q8_K activations (the specification; the bits of ggml's ggml_vec_dot_*_q8_K_generic):
// per super-block the integer isum = sum_s ls[s] * sum_{e in s} q_e x_e is exact, and acc = acc +
// ((d * kUnit) * dx) * isum in f32 (a rounded product, then a rounded sum). ggml multiplies the
// sum by kUnit at the end instead: a power of two, the same bits while nothing is subnormal; and
// its IQ1 rule, d dx (sumi + 1/8 sumi1), gives the same bits (exact multiples of 1/8 below 2^21).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/quant/blocks.h"
#include "kernels/quant/grid_list.h"
#include "kernels/quant/iq_grids.h"
#include "tensor/fp16.h"
#include "tensor/ggml_type.h"

namespace ridge::kernels {

struct GridBlock {
  float d;
  alignas(32) int8_t q[kQkK];
  int16_t ls[kQkK / 16];
};

struct BlockTq1_0 {  // 5 ternary digits per qs byte, 4 per qh byte (base 3, scaled to 8 bits)
  uint8_t qs[48];
  uint8_t qh[4];
  uint16_t d;
};
struct BlockTq2_0 {  // 2 bits per element, q - 1
  uint8_t qs[64];
  uint16_t d;
};
struct BlockIq2Xxs {  // per 32: 4 grid bytes, then 4 x 7 sign bits and a 4-bit scale
  uint16_t d;
  uint16_t qs[32];
};
struct BlockIq2Xs {  // per 8: 9-bit grid index and 7 sign bits; a 4-bit scale per 16
  uint16_t d;
  uint16_t qs[32];
  uint8_t scales[8];
};
struct BlockIq2S {  // per 8: 8 + 2 bits of grid index, 8 sign bits; a 4-bit scale per 16
  uint16_t d;
  uint8_t qs[64];  // 32 index bytes, then 32 sign bytes
  uint8_t qh[8];
  uint8_t scales[8];
};
struct BlockIq3Xxs {  // per 32: 8 grid bytes (4 elements each); then per 32 signs and scale
  uint16_t d;
  uint8_t qs[96];
};
struct BlockIq3S {  // per 4 elements an 8 + 1-bit grid index; 8 sign bits per 8; 4-bit scale per 32
  uint16_t d;
  uint8_t qs[64];
  uint8_t qh[8];
  uint8_t signs[32];
  uint8_t scales[4];
};
struct BlockIq1S {  // per 8: 8 + 3-bit grid index; per 32 a 3-bit scale and the delta's sign
  uint16_t d;
  uint8_t qs[32];
  uint16_t qh[8];
};
struct BlockIq1M {  // per 8: 8 + 3-bit index and the delta's sign; 3-bit scales per 16; d in the
  uint8_t qs[32];   // top nibbles of the scales
  uint8_t qh[16];
  uint8_t scales[8];
};
static_assert(sizeof(BlockTq1_0) == 54 && sizeof(BlockTq2_0) == 66);
static_assert(sizeof(BlockIq2Xxs) == 66 && sizeof(BlockIq2Xs) == 74 && sizeof(BlockIq2S) == 82);
static_assert(sizeof(BlockIq3Xxs) == 98 && sizeof(BlockIq3S) == 110);
static_assert(sizeof(BlockIq1S) == 50 && sizeof(BlockIq1M) == 56);

namespace grid_detail {

// 8 grid magnitudes (all > 0) with the signs of `neg` (0xff bytes): (g ^ m) + (m & 1) per byte,
// without carries since no byte of g is 0.
inline void put_signed(int8_t* q, uint64_t g, uint64_t neg) {
  const uint64_t v = (g ^ neg) + (neg & 0x0101010101010101ull);
  std::memcpy(q, &v, 8);
}
inline uint32_t load32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// 8 IQ1 grid values (int8 -1, 0, 1) as 8 g + delta.
inline void put_iq1(int8_t* q, uint64_t g, int delta) {
  for (int e = 0; e < 8; ++e) q[e] = static_cast<int8_t>(8 * static_cast<int8_t>(g >> (8 * e)) + delta);
}
// The two odd scales 2 s + 1 of a byte's nibbles (low: the first 16 elements, high: the next 16).
inline void nibble_scales(uint8_t byte, int16_t* ls) {
  ls[0] = static_cast<int16_t>(2 * (byte & 15) + 1);
  ls[1] = static_cast<int16_t>(2 * (byte >> 4) + 1);
}
// The ternary digit l of a TQ1_0 byte (ggml: the byte times 3^l modulo 256, times 3, top bits).
inline int8_t trit(uint8_t b, int l) {
  constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto v = static_cast<uint8_t>(b * kPow3[l]);
  return static_cast<int8_t>(((static_cast<uint16_t>(v) * 3) >> 8) - 1);
}

}  // namespace grid_detail

// Decoding rule of the per-16 scale (ggml's float operations, so that dequantization is exact).
enum class GridScaleRule {
  kHalfQuarter,  // IQ2: d * (0.5 + (ls - 1) / 2) * 0.25, times q
  kHalfHalf,     // IQ3_XXS: d * (0.5 + (ls - 1) / 2) * 0.5, times q
  kOdd,          // IQ3_S, TQ: d * ls, times q
  kOddEighth,    // IQ1: d * ls, times q / 8
};

struct Tq2_0 {
  using Block = BlockTq2_0;
  static constexpr float kUnit = 1.0f;
  static constexpr GridScaleRule kRule = GridScaleRule::kOdd;
  static float scale(const Block& b) { return fp16_to_f32(b.d); }
  static void unpack(const Block& b, GridBlock& u) {
    u.d = scale(b);
    for (int j = 0; j < 2; ++j) {
      for (int l = 0; l < 4; ++l) {
        for (int m = 0; m < 32; ++m) u.q[128 * j + 32 * l + m] = static_cast<int8_t>(((b.qs[32 * j + m] >> (2 * l)) & 3) - 1);
      }
    }
    for (int16_t& s : u.ls) s = 1;
  }
};

struct Tq1_0 {
  using Block = BlockTq1_0;
  static constexpr float kUnit = 1.0f;
  static constexpr GridScaleRule kRule = GridScaleRule::kOdd;
  static float scale(const Block& b) { return fp16_to_f32(b.d); }
  static void unpack(const Block& b, GridBlock& u) {
    using grid_detail::trit;
    u.d = scale(b);
    for (int l = 0; l < 5; ++l) {
      for (int m = 0; m < 32; ++m) u.q[32 * l + m] = trit(b.qs[m], l);
      for (int m = 0; m < 16; ++m) u.q[160 + 16 * l + m] = trit(b.qs[32 + m], l);
    }
    for (int l = 0; l < 4; ++l) {
      for (int j = 0; j < 4; ++j) u.q[240 + 4 * l + j] = trit(b.qh[j], l);
    }
    for (int16_t& s : u.ls) s = 1;
  }
};

struct Iq2Xxs {
  using Block = BlockIq2Xxs;
  static constexpr float kUnit = 0.125f;
  static constexpr GridScaleRule kRule = GridScaleRule::kHalfQuarter;
  static float scale(const Block& b) { return fp16_to_f32(b.d); }
  static void unpack(const Block& b, GridBlock& u) {
    u.d = scale(b);
    for (int ib = 0; ib < 8; ++ib) {
      const uint32_t idx = grid_detail::load32(b.qs + 4 * ib), aux = grid_detail::load32(b.qs + 4 * ib + 2);
      u.ls[2 * ib] = u.ls[2 * ib + 1] = static_cast<int16_t>(2 * (aux >> 28) + 1);
      for (int l = 0; l < 4; ++l) {
        grid_detail::put_signed(u.q + 32 * ib + 8 * l, kIq2XxsGrid[(idx >> (8 * l)) & 255],
                                kEvenSignBytes[(aux >> (7 * l)) & 127]);
      }
    }
  }
};

struct Iq2Xs {
  using Block = BlockIq2Xs;
  static constexpr float kUnit = 0.125f;
  static constexpr GridScaleRule kRule = GridScaleRule::kHalfQuarter;
  static float scale(const Block& b) { return fp16_to_f32(b.d); }
  static void unpack(const Block& b, GridBlock& u) {
    u.d = scale(b);
    for (int ib = 0; ib < 8; ++ib) {
      grid_detail::nibble_scales(b.scales[ib], u.ls + 2 * ib);
      for (int l = 0; l < 4; ++l) {
        const uint16_t v = b.qs[4 * ib + l];
        grid_detail::put_signed(u.q + 32 * ib + 8 * l, kIq2XsGrid[v & 511], kEvenSignBytes[v >> 9]);
      }
    }
  }
};

struct Iq2S {
  using Block = BlockIq2S;
  static constexpr float kUnit = 0.125f;
  static constexpr GridScaleRule kRule = GridScaleRule::kHalfQuarter;
  static float scale(const Block& b) { return fp16_to_f32(b.d); }
  static void unpack(const Block& b, GridBlock& u) {
    u.d = scale(b);
    for (int ib = 0; ib < 8; ++ib) {
      grid_detail::nibble_scales(b.scales[ib], u.ls + 2 * ib);
      for (int l = 0; l < 4; ++l) {
        const uint32_t idx = b.qs[4 * ib + l] | ((static_cast<uint32_t>(b.qh[ib]) << (8 - 2 * l)) & 0x300);
        grid_detail::put_signed(u.q + 32 * ib + 8 * l, kIq2SGrid[idx], kSignBytes[b.qs[32 + 4 * ib + l]]);
      }
    }
  }
};

struct Iq3Xxs {
  using Block = BlockIq3Xxs;
  static constexpr float kUnit = 0.25f;
  static constexpr GridScaleRule kRule = GridScaleRule::kHalfHalf;
  static float scale(const Block& b) { return fp16_to_f32(b.d); }
  static void unpack(const Block& b, GridBlock& u) {
    u.d = scale(b);
    for (int ib = 0; ib < 8; ++ib) {
      const uint32_t aux = grid_detail::load32(b.qs + 64 + 4 * ib);
      u.ls[2 * ib] = u.ls[2 * ib + 1] = static_cast<int16_t>(2 * (aux >> 28) + 1);
      const uint8_t* g = b.qs + 8 * ib;
      for (int l = 0; l < 4; ++l) {
        const uint64_t pair = kIq3XxsGrid[g[2 * l]] | (static_cast<uint64_t>(kIq3XxsGrid[g[2 * l + 1]]) << 32);
        grid_detail::put_signed(u.q + 32 * ib + 8 * l, pair, kEvenSignBytes[(aux >> (7 * l)) & 127]);
      }
    }
  }
};

struct Iq3S {
  using Block = BlockIq3S;
  static constexpr float kUnit = 1.0f;
  static constexpr GridScaleRule kRule = GridScaleRule::kOdd;
  static float scale(const Block& b) { return fp16_to_f32(b.d); }
  static void unpack(const Block& b, GridBlock& u) {
    u.d = scale(b);
    for (int ib = 0; ib < 8; ++ib) {
      u.ls[2 * ib] = u.ls[2 * ib + 1] = static_cast<int16_t>(2 * ((b.scales[ib / 2] >> (4 * (ib % 2))) & 15) + 1);
      const uint8_t* g = b.qs + 8 * ib;
      const uint32_t h = b.qh[ib];
      for (int l = 0; l < 4; ++l) {
        const uint32_t i1 = g[2 * l] | ((h << (8 - 2 * l)) & 256), i2 = g[2 * l + 1] | ((h << (7 - 2 * l)) & 256);
        const uint64_t pair = kIq3SGrid[i1] | (static_cast<uint64_t>(kIq3SGrid[i2]) << 32);
        grid_detail::put_signed(u.q + 32 * ib + 8 * l, pair, kSignBytes[b.signs[4 * ib + l]]);
      }
    }
  }
};

struct Iq1S {
  using Block = BlockIq1S;
  static constexpr float kUnit = 0.125f;
  static constexpr GridScaleRule kRule = GridScaleRule::kOddEighth;
  static float scale(const Block& b) { return fp16_to_f32(b.d); }
  static void unpack(const Block& b, GridBlock& u) {
    u.d = scale(b);
    for (int ib = 0; ib < 8; ++ib) {
      const uint32_t h = b.qh[ib];
      u.ls[2 * ib] = u.ls[2 * ib + 1] = static_cast<int16_t>(2 * ((h >> 12) & 7) + 1);
      const int delta = (h & 0x8000) != 0 ? -1 : 1;
      for (int l = 0; l < 4; ++l) {
        grid_detail::put_iq1(u.q + 32 * ib + 8 * l, kIq1SGrid[b.qs[4 * ib + l] | (((h >> (3 * l)) & 7) << 8)], delta);
      }
    }
  }
};

struct Iq1M {
  using Block = BlockIq1M;
  static constexpr float kUnit = 0.125f;
  static constexpr GridScaleRule kRule = GridScaleRule::kOddEighth;
  // The fp16 d in the top nibbles of the four 16-bit scale words.
  static float scale(const Block& b) {
    uint16_t sc[4];
    std::memcpy(sc, b.scales, 8);
    return fp16_to_f32(static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) |
                                             (sc[3] & 0xf000)));
  }
  static void unpack(const Block& b, GridBlock& u) {
    uint16_t sc[4];
    std::memcpy(sc, b.scales, 8);
    u.d = scale(b);
    for (int ib = 0; ib < 8; ++ib) {
      const int shift = 6 * (ib % 2);
      u.ls[2 * ib] = static_cast<int16_t>(2 * ((sc[ib / 2] >> shift) & 7) + 1);
      u.ls[2 * ib + 1] = static_cast<int16_t>(2 * ((sc[ib / 2] >> (shift + 3)) & 7) + 1);
      for (int l = 0; l < 4; ++l) {
        const uint32_t h = b.qh[2 * ib + l / 2] >> (4 * (l % 2));  // this group's nibble
        const int delta = (h & 8) != 0 ? -1 : 1;
        grid_detail::put_iq1(u.q + 32 * ib + 8 * l, kIq1SGrid[b.qs[4 * ib + l] | ((h & 7) << 8)], delta);
      }
    }
  }
};

}  // namespace ridge::kernels

namespace ridge::kernels {

// Calls fn(Format{}) for a grid format's type and returns true; false for any other type.
template <typename Fn>
bool with_grid_format(GgmlType type, Fn&& fn) {
#define RIDGE_GRID_CASE(T, F, n) \
  case GgmlType::k##T:           \
    fn(F{});                     \
    return true;
  switch (type) {
    RIDGE_GRID_FORMATS(RIDGE_GRID_CASE)
    default: return false;
  }
#undef RIDGE_GRID_CASE
}

#define RIDGE_GRID_TYPE(T, F, n) GgmlType::k##T,
inline constexpr GgmlType kGridFormats[] = {RIDGE_GRID_FORMATS(RIDGE_GRID_TYPE)};
#undef RIDGE_GRID_TYPE

// Decodes nb super-blocks of a grid format (CHECKs that `type` is one), bit-identical to ggml's
// dequantize_row_* (kernels/quant/grid_rows.cpp).
void dequantize_grid(GgmlType type, const void* src, float* dst, int64_t nb);

}  // namespace ridge::kernels
