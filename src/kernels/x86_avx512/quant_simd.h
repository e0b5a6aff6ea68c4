// Small AVX-512 helpers shared by the quantized dot kernels of this directory. Include only from
// files compiled with the AVX-512 flags; internal linkage, so no ISA-flagged copy can be picked by
// the linker for other code.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ridge::kernels::quant_avx512 {
namespace {

inline float half(uint16_t h) { return _cvtsh_ss(h); }

inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The fixed lane tree every 16-lane sum of this project follows (attention scores, float dots):
// (lo 8 + hi 8), then (lo 4 + hi 4), then (0 + 2, 1 + 3), then 0 + 1.
inline float hsum16(__m512 v) {
  return hsum8(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

inline __m512i join(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_zextsi256_si512(lo), hi, 1);
}

// Sums of int32 lanes (exact: the caller's totals fit in int32).
inline int32_t hsum_epi32(__m256i v) {
  __m128i q = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  q = _mm_add_epi32(q, _mm_unpackhi_epi64(q, q));
  return _mm_cvtsi128_si32(_mm_add_epi32(q, _mm_shuffle_epi32(q, 1)));
}
inline int32_t hsum_epi32(__m512i v) {
  return hsum_epi32(_mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1)));
}

// How far ahead of the block it reads a kPanels16 stream also prefetches into L1 (T0), on top of
// its L2 prefetch (T1) 4-8 KiB on: the lines then wait in L1 when the loads reach them instead of
// costing an L2 round trip each. A core that reads faster wants more bytes in flight
// (docs/tuning.md, "L1 prefetch distance").
inline constexpr int64_t kStreamL1Ahead = 4096;

// A decode stream's next step: a line every l2_stride bytes of [p, p + bytes) at l2_ahead bytes
// on into L2 (64: every line), then every line at kStreamL1Ahead on into L1 (every other line
// there was slower on Q8_0). The order matters: the same requests alternating T1 and T0 line by
// line were much slower than the two runs one after the other; the L2 requests cost compute, but
// fewer of them slowed decode from memory (docs/tuning.md, "Prefetch order").
inline __attribute__((always_inline)) void prefetch_stream(const uint8_t* p, int64_t l2_ahead, int64_t bytes,
                                                            int64_t l2_stride = 64) {
  const char* c = reinterpret_cast<const char*>(p);
  for (int64_t k = 0; k < bytes; k += l2_stride) _mm_prefetch(c + l2_ahead + k, _MM_HINT_T1);
  for (int64_t k = 0; k < bytes; k += 64) _mm_prefetch(c + kStreamL1Ahead + k, _MM_HINT_T0);
}

// 128-bit lane L = the 16 bytes at p[L]. The lane index of vinserti32x4 must be an immediate, so
// the inserts are spelled out: a loop over L folds to constants only when the optimizer unrolls
// it, which -O2 with sanitizers does not.
inline __m512i load_4x128(const uint8_t* p0, const uint8_t* p1, const uint8_t* p2,
                          const uint8_t* p3) {
  const auto load16 = [](const uint8_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  };
  __m512i v = _mm512_castsi128_si512(load16(p0));
  v = _mm512_inserti32x4(v, load16(p1), 1);
  v = _mm512_inserti32x4(v, load16(p2), 2);
  return _mm512_inserti32x4(v, load16(p3), 3);
}

}  // namespace
}  // namespace ridge::kernels::quant_avx512
