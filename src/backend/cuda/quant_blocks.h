// Weight decoding and per-lane dot products of the CUDA matmul, written once for nvcc (device)
// and g++ (the host tests, tests/backend/cuda/quant_blocks_test.cpp).
//
// A "unit" is 32 consecutive values of a weight row in GGUF's layout: one block of the 32-value
// formats, an eighth of a 256-value K super-block, 32 plain values of F32/F16/BF16. dequant_unit
// gives the same bits on host and device as ridge's reference decoders
// (kernels/quant/dequantize.cpp, ggml's order of float operations): on the device every product
// and sum goes through the rn_* helpers (__fmul_rn, ...), which nvcc never contracts into an fma.
// (In the decoders every product that a sum follows is exact anyway: fp16 scale times a small
// integer, at most 22 significant bits; so a contraction could not change their bits.)
//
// Plain headers only: nvcc compiles this, and must not see fmt (base/status.h, kernels/kernels.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tensor/ggml_type.h"

#if defined(__CUDACC__)
#define RIDGE_HD __host__ __device__ __forceinline__
#else
#define RIDGE_HD inline
#endif
// Template bodies of kernels that host tests also run (attention_warp.h, row_ops.h): device
// code under nvcc, plain inline functions for the host compiler.
#if defined(__CUDACC__)
#define RIDGE_DEVICE_BODY __device__ __forceinline__
#else
#define RIDGE_DEVICE_BODY inline
#endif
#if defined(__CUDA_ARCH__)  // nvcc's device pass
#define RIDGE_UNROLL _Pragma("unroll")
#else
#define RIDGE_UNROLL
#endif

namespace ridge::backend::cuda {

inline constexpr int kUnit = 32;  // values per unit

// ---- Float operations, correctly rounded, never fused on the device ----

RIDGE_HD float rn_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
RIDGE_HD float rn_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
RIDGE_HD float rn_sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
// a * b + c with one rounding (glibc's fmaf is correctly rounded on the host too).
RIDGE_HD float rn_fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

RIDGE_HD float bits_to_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// IEEE half bits -> f32, exact (as ridge::fp16_to_f32: NaN payloads kept, subnormals as
// man * 2^-24, a product that is exact since man < 2^10 and the result is a normal f32).
RIDGE_HD float fp16_bits_to_float(uint32_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    if (man == 0) return bits_to_float(sign);
    const float v = rn_mul(static_cast<float>(man), 5.9604644775390625e-8f);
    return sign ? -v : v;
  }
  if (exp == 31) return bits_to_float(sign | 0x7f800000u | (man << 13));
  return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
}
// bfloat16 bits -> f32 (the top half of the f32's bits).
RIDGE_HD float bf16_bits_to_float(uint32_t h) { return bits_to_float((h & 0xffffu) << 16); }
template <bool kBf16>
RIDGE_HD float half_bits_to_float(uint32_t h) {
  return kBf16 ? bf16_bits_to_float(h) : fp16_bits_to_float(h);
}

// ---- Loads from weight memory (read-only for the kernel's lifetime) ----

RIDGE_HD uint32_t load_u8(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}
// Little-endian 16-bit field at any address.
RIDGE_HD uint32_t load_u16(const uint8_t* p) { return load_u8(p) | (load_u8(p + 1) << 8); }

// The 4 * N bytes at p (any alignment) as N little-endian words. On the device: aligned 32-bit
// loads joined by funnel shifts; every word loaded holds at least one byte of [p, p + 4N), so it
// never touches a page the caller's bytes are not on.
template <int N>
RIDGE_HD void load_words(const uint8_t* p, uint32_t (&w)[N]) {
#if defined(__CUDA_ARCH__)
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const auto* base = reinterpret_cast<const uint32_t*>(a & ~uintptr_t{3});
  const uint32_t sh = static_cast<uint32_t>(a & 3) * 8;
  uint32_t lo = __ldg(base);
  RIDGE_UNROLL
  for (int k = 0; k < N; ++k) {
    const uint32_t hi = (k + 1 < N || sh != 0) ? __ldg(base + k + 1) : 0u;
    w[k] = __funnelshift_r(lo, hi, sh);
    lo = hi;
  }
#else
  std::memcpy(w, p, 4 * N);  // little-endian host
#endif
}

// Byte k (0..4N-1, k a constant after unrolling) of a word array.
template <int N>
RIDGE_HD uint32_t byte_of(const uint32_t (&w)[N], int k) {
  return (w[k / 4] >> (8 * (k % 4))) & 0xffu;
}

// ---- The 32-value block formats: unit u is block u ----

// Q4_0 (18 bytes: d, qs[16]): x = (q - 8) * d.
RIDGE_HD void unit_q4_0(const uint8_t* row, int64_t u, float* out) {
  const uint8_t* b = row + u * 18;
  const float d = fp16_bits_to_float(load_u16(b));
  uint32_t qs[4];
  load_words(b + 2, qs);
  RIDGE_UNROLL
  for (int j = 0; j < 16; ++j) {
    const uint32_t q = byte_of(qs, j);
    out[j] = rn_mul(static_cast<float>(static_cast<int>(q & 15) - 8), d);
    out[j + 16] = rn_mul(static_cast<float>(static_cast<int>(q >> 4) - 8), d);
  }
}

// Q4_1 (20 bytes: d, m, qs[16]): x = q * d + m.
RIDGE_HD void unit_q4_1(const uint8_t* row, int64_t u, float* out) {
  const uint8_t* b = row + u * 20;
  const float d = fp16_bits_to_float(load_u16(b));
  const float m = fp16_bits_to_float(load_u16(b + 2));
  uint32_t qs[4];
  load_words(b + 4, qs);
  RIDGE_UNROLL
  for (int j = 0; j < 16; ++j) {
    const uint32_t q = byte_of(qs, j);
    out[j] = rn_add(rn_mul(static_cast<float>(q & 15), d), m);
    out[j + 16] = rn_add(rn_mul(static_cast<float>(q >> 4), d), m);
  }
}

// The five-bit values of Q5_0/Q5_1: nibbles of qs, bit 4 of element e = bit e of qh.
RIDGE_HD void q5_values(const uint32_t (&qs)[4], uint32_t qh, int (&v)[32]) {
  RIDGE_UNROLL
  for (int j = 0; j < 16; ++j) {
    const uint32_t q = byte_of(qs, j);
    v[j] = static_cast<int>((q & 15) | (((qh >> j) & 1u) << 4));
    v[j + 16] = static_cast<int>((q >> 4) | (((qh >> (j + 16)) & 1u) << 4));
  }
}

// Q5_0 (22 bytes: d, qh[4], qs[16]): x = (q - 16) * d.
RIDGE_HD void unit_q5_0(const uint8_t* row, int64_t u, float* out) {
  const uint8_t* b = row + u * 22;
  const float d = fp16_bits_to_float(load_u16(b));
  uint32_t qh[1], qs[4];
  load_words(b + 2, qh);
  load_words(b + 6, qs);
  int v[32];
  q5_values(qs, qh[0], v);
  RIDGE_UNROLL
  for (int e = 0; e < 32; ++e) out[e] = rn_mul(static_cast<float>(v[e] - 16), d);
}

// Q5_1 (24 bytes: d, m, qh[4], qs[16]): x = q * d + m.
RIDGE_HD void unit_q5_1(const uint8_t* row, int64_t u, float* out) {
  const uint8_t* b = row + u * 24;
  const float d = fp16_bits_to_float(load_u16(b));
  const float m = fp16_bits_to_float(load_u16(b + 2));
  uint32_t qh[1], qs[4];
  load_words(b + 4, qh);
  load_words(b + 8, qs);
  int v[32];
  q5_values(qs, qh[0], v);
  RIDGE_UNROLL
  for (int e = 0; e < 32; ++e) out[e] = rn_add(rn_mul(static_cast<float>(v[e]), d), m);
}

// Q8_0 (34 bytes: d, qs[32] int8): x = q * d.
RIDGE_HD void unit_q8_0(const uint8_t* row, int64_t u, float* out) {
  const uint8_t* b = row + u * 34;
  const float d = fp16_bits_to_float(load_u16(b));
  uint32_t qs[8];
  load_words(b + 2, qs);
  RIDGE_UNROLL
  for (int e = 0; e < 32; ++e) {
    out[e] = rn_mul(static_cast<float>(static_cast<int8_t>(byte_of(qs, e))), d);
  }
}

// ---- Plain floats: unit u is values 32u .. 32u + valid - 1, the rest of out set to 0 ----

RIDGE_HD void unit_f32(const uint8_t* row, int64_t u, int valid, float* out) {
  const uint8_t* p = row + u * 128;
  if (valid == kUnit) {
    uint32_t w[32];
    load_words(p, w);
    RIDGE_UNROLL
    for (int e = 0; e < 32; ++e) out[e] = bits_to_float(w[e]);
  } else {
    RIDGE_UNROLL
    for (int e = 0; e < 32; ++e) {
      uint32_t w[1] = {0};
      if (e < valid) load_words(p + 4 * e, w);
      out[e] = bits_to_float(w[0]);
    }
  }
}

// F16 (kBf16 false) or BF16 (true).
template <bool kBf16>
RIDGE_HD void unit_half(const uint8_t* row, int64_t u, int valid, float* out) {
  const uint8_t* p = row + u * 64;
  if (valid == kUnit) {
    uint32_t w[16];
    load_words(p, w);
    RIDGE_UNROLL
    for (int k = 0; k < 16; ++k) {
      out[2 * k] = half_bits_to_float<kBf16>(w[k] & 0xffffu);
      out[2 * k + 1] = half_bits_to_float<kBf16>(w[k] >> 16);
    }
  } else {
    RIDGE_UNROLL
    for (int e = 0; e < 32; ++e) out[e] = e < valid ? half_bits_to_float<kBf16>(load_u16(p + 2 * e)) : 0.0f;
  }
}

}  // namespace ridge::backend::cuda

// The 256-value formats (K quants, IQ4_XS) and IQ4_NL; needs the helpers above.
#include "backend/cuda/quant_blocks_k.h"

namespace ridge::backend::cuda {

// The types with a unit decoder, as X(kName) each: those dequant_unit (and so the CUDA matmul and
// get_rows) decode.
#define RIDGE_UNIT_TYPES(X)                                                                     \
  X(kF32) X(kF16) X(kBF16) X(kQ4_0) X(kQ4_1) X(kQ5_0) X(kQ5_1) X(kQ8_0) X(kQ2_K) X(kQ3_K) X(kQ4_K) \
  X(kQ5_K) X(kQ6_K) X(kIQ4_NL) X(kIQ4_XS)

RIDGE_HD constexpr bool unit_type_supported(GgmlType t) {
  switch (t) {
#define RIDGE_UNIT_CASE(T) case GgmlType::T:
    RIDGE_UNIT_TYPES(RIDGE_UNIT_CASE)
#undef RIDGE_UNIT_CASE
      return true;
    default:
      return false;
  }
}

// Unit u of a row of type T into out[32]. `valid` (values of the unit inside the row, 1..32) only
// matters for the float types, whose last unit may be partial; out[valid..31] = 0 there.
template <GgmlType T>
RIDGE_HD void dequant_unit_t(const uint8_t* row, int64_t u, float* out, int valid = kUnit) {
  if constexpr (T == GgmlType::kF32) unit_f32(row, u, valid, out);
  else if constexpr (T == GgmlType::kF16) unit_half<false>(row, u, valid, out);
  else if constexpr (T == GgmlType::kBF16) unit_half<true>(row, u, valid, out);
  else if constexpr (T == GgmlType::kQ4_0) unit_q4_0(row, u, out);
  else if constexpr (T == GgmlType::kQ4_1) unit_q4_1(row, u, out);
  else if constexpr (T == GgmlType::kQ5_0) unit_q5_0(row, u, out);
  else if constexpr (T == GgmlType::kQ5_1) unit_q5_1(row, u, out);
  else if constexpr (T == GgmlType::kQ8_0) unit_q8_0(row, u, out);
  else if constexpr (T == GgmlType::kIQ4_NL) unit_iq4_nl(row, u, out);
  else if constexpr (T == GgmlType::kQ2_K) unit_q2_k(row, u, out);
  else if constexpr (T == GgmlType::kQ3_K) unit_q3_k(row, u, out);
  else if constexpr (T == GgmlType::kQ4_K) unit_q45_k<false>(row, u, out);
  else if constexpr (T == GgmlType::kQ5_K) unit_q45_k<true>(row, u, out);
  else if constexpr (T == GgmlType::kQ6_K) unit_q6_k(row, u, out);
  else if constexpr (T == GgmlType::kIQ4_XS) unit_iq4_xs(row, u, out);
  else static_assert(T == GgmlType::kF32, "type without a unit decoder");
  (void)valid;
}

// Calls f(std::integral_constant<GgmlType, T>{}) for the runtime type t and returns true; false
// (calling nothing) where !unit_type_supported(t). Host only.
template <typename F>
bool with_unit_type(GgmlType t, F&& f) {
  switch (t) {
#define RIDGE_UNIT_CASE(T) \
  case GgmlType::T: f(std::integral_constant<GgmlType, GgmlType::T>{}); return true;
    RIDGE_UNIT_TYPES(RIDGE_UNIT_CASE)
#undef RIDGE_UNIT_CASE
    default: return false;
  }
}

// dequant_unit_t for a runtime type (unsupported types leave out untouched).
RIDGE_HD void dequant_unit(GgmlType t, const uint8_t* row, int64_t u, float* out, int valid = kUnit) {
  switch (t) {
#define RIDGE_UNIT_CASE(T) \
  case GgmlType::T: dequant_unit_t<GgmlType::T>(row, u, out, valid); return;
    RIDGE_UNIT_TYPES(RIDGE_UNIT_CASE)
#undef RIDGE_UNIT_CASE
    default: return;
  }
}

// Units of a row of `cols` values, and how many values of unit u lie inside it (1..32).
RIDGE_HD int64_t units_of(int64_t cols) { return (cols + kUnit - 1) / kUnit; }
RIDGE_HD int unit_valid(int64_t cols, int64_t u) {
  const int64_t left = cols - u * kUnit;
  return left < kUnit ? static_cast<int>(left) : kUnit;
}

// The get_rows arithmetic: unit u of the row, each value times scale (value * scale).
template <GgmlType T>
RIDGE_HD void scaled_unit(const uint8_t* row, int64_t u, int valid, float scale, float* out) {
  dequant_unit_t<T>(row, u, out, valid);
  RIDGE_UNROLL
  for (int e = 0; e < kUnit; ++e) out[e] = rn_mul(out[e], scale);
}

// The 32 values of x at p, of which the first `valid` lie inside the row (the rest read as 0).
// On the device: 16-byte loads where p is 16-byte aligned.
RIDGE_HD void load_x_unit(const float* p, int valid, float* out) {
#if defined(__CUDA_ARCH__)
  if (valid == kUnit && (reinterpret_cast<uintptr_t>(p) & 15) == 0) {
    RIDGE_UNROLL
    for (int k = 0; k < 8; ++k) {
      const float4 v = __ldg(reinterpret_cast<const float4*>(p) + k);
      out[4 * k] = v.x;
      out[4 * k + 1] = v.y;
      out[4 * k + 2] = v.z;
      out[4 * k + 3] = v.w;
    }
    return;
  }
  RIDGE_UNROLL
  for (int e = 0; e < kUnit; ++e) out[e] = e < valid ? __ldg(p + e) : 0.0f;
#else
  for (int e = 0; e < kUnit; ++e) out[e] = e < valid ? p[e] : 0.0f;
#endif
}

// One lane's share of y[r][j] = sum_c x[r * ldx + c] * W[j][c] for r < nr <= MT, wrow = W[j] of
// type T and `cols` values: the lane takes units lane, lane + 32, ... . Per unit and x row, the 32
// products go into 4 fma chains (value e into chain e % 4, e ascending), summed as
// (c0 + c1) + (c2 + c3) and added to acc[r] (from 0). acc[r >= nr] = 0. acc[r] depends only on
// wrow, cols, lane and x row r: not on MT, nr, r or the other rows (batch invariance).
template <GgmlType T, int MT>
RIDGE_HD void lane_partials(const uint8_t* wrow, int64_t cols, const float* x, int64_t ldx, int nr,
                            int lane, float (&acc)[MT]) {
  RIDGE_UNROLL
  for (int r = 0; r < MT; ++r) acc[r] = 0.0f;
  const int64_t n_units = units_of(cols);
  for (int64_t u = lane; u < n_units; u += 32) {
    const int valid = unit_valid(cols, u);
    float w[kUnit];
    dequant_unit_t<T>(wrow, u, w, valid);
    RIDGE_UNROLL
    for (int r = 0; r < MT; ++r) {
      if (r >= nr) break;
      float xv[kUnit];
      load_x_unit(x + r * ldx + u * kUnit, valid, xv);
      float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      RIDGE_UNROLL
      for (int e = 0; e < kUnit; ++e) c[e % 4] = rn_fma(w[e], xv[e], c[e % 4]);
      acc[r] = rn_add(acc[r], rn_add(rn_add(c[0], c[1]), rn_add(c[2], c[3])));
    }
  }
}

// Host model of the kernel's warp reduction: 5 butterfly steps (offset 16, 8, 4, 2, 1), lane l
// taking v[l] + v[l ^ offset]; every lane ends with the same sum, returned.
inline float xor_tree_sum(const float (&lanes)[32]) {
  float v[32];
  for (int l = 0; l < 32; ++l) v[l] = lanes[l];
  for (int off = 16; off > 0; off /= 2) {
    float t[32];
    for (int l = 0; l < 32; ++l) t[l] = rn_add(v[l], v[l ^ off]);
    for (int l = 0; l < 32; ++l) v[l] = t[l];
  }
  return v[0];
}

}  // namespace ridge::backend::cuda
