// Small AVX2 helpers shared by the quantized dot kernels of this directory. Include only from
// files compiled with the AVX2 flags; internal linkage, so no ISA-flagged copy can be picked by
// the linker for other code.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ridge::kernels::quant_avx2 {
namespace {

inline float half(uint16_t h) { return _cvtsh_ss(h); }

inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// 32 int32 values in [-127, 127] (q[0] first) as 32 bytes in order: the saturating packs are
// exact there, and the permute undoes their 128-bit lane interleave.
inline __m256i pack_bytes32(const __m256i q[4]) {
  const __m256i w01 = _mm256_packs_epi32(q[0], q[1]);
  const __m256i w23 = _mm256_packs_epi32(q[2], q[3]);
  return _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Lane r = the sum of p[r]'s 8 lanes (exact: integers).
inline __m256i fold8_epi32(const __m256i p[8]) {
  const __m256i s01 = _mm256_hadd_epi32(p[0], p[1]);
  const __m256i s23 = _mm256_hadd_epi32(p[2], p[3]);
  const __m256i s45 = _mm256_hadd_epi32(p[4], p[5]);
  const __m256i s67 = _mm256_hadd_epi32(p[6], p[7]);
  // lanes 0-3: rows 0-3 (low 128 bits' sums), lanes 4-7: rows 0-3 (high 128 bits'); same for 4-7
  const __m256i s0123 = _mm256_hadd_epi32(s01, s23);
  const __m256i s4567 = _mm256_hadd_epi32(s45, s67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(s0123, s4567, 0x20),
                          _mm256_permute2x128_si256(s0123, s4567, 0x31));
}

// An 8 x 8 transpose of dwords: out[t] lane r = dword t of in[r] (8 rows' 32 bytes -> one
// register per 4-byte group, lane r from row r).
inline void transpose_8x8_epi32(const __m256i in[8], __m256i out[8]) {
  __m256i t[8];
  for (int r = 0; r < 8; r += 2) {
    t[r] = _mm256_unpacklo_epi32(in[r], in[r + 1]);
    t[r + 1] = _mm256_unpackhi_epi32(in[r], in[r + 1]);
  }
  __m256i u[8];
  for (int r = 0; r < 8; r += 4) {
    u[r] = _mm256_unpacklo_epi64(t[r], t[r + 2]);
    u[r + 1] = _mm256_unpackhi_epi64(t[r], t[r + 2]);
    u[r + 2] = _mm256_unpacklo_epi64(t[r + 1], t[r + 3]);
    u[r + 3] = _mm256_unpackhi_epi64(t[r + 1], t[r + 3]);
  }
  // u[g] (g < 4) holds dword g of rows 0-3 in its low half and dword g + 4 there in its high
  // half; u[g + 4] the same for rows 4-7.
  for (int g = 0; g < 4; ++g) {
    out[g] = _mm256_permute2x128_si256(u[g], u[g + 4], 0x20);
    out[g + 4] = _mm256_permute2x128_si256(u[g], u[g + 4], 0x31);
  }
}

}  // namespace
}  // namespace ridge::kernels::quant_avx2
