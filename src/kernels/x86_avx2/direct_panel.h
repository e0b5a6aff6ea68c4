// AVX2 Q8_0 decode (m <= kDirectMaxM): a panel of 8 weight rows read straight from the rows, no
// transposes and no pack buffer (x86_avx2/q8_0.cpp picks this or the packed path per panel). Per
// block, row r's products are summed by vpmaddubsw / vpmaddwd into 8 int32 lanes, and a vphaddd
// tree folds the 8 rows' vectors into one with row r's exact integer dot isum_b in lane r. The float step per lane is the AVX-512 panel kernels' one:
//   acc = fma(float(isum_b), dw_b * dx_b, acc)          block after block from 0,
// which for Q8_0 is ref's specification: bit-identical to ref, to AVX-512 and to the packed AVX2
// path that serves m > kDirectMaxM. (Q4_0 through this path was slower than its per-row dot: the
// nibble unpack and the fold cost more per byte than its half-size blocks save; docs/tuning.md.)
// Include only from x86_avx2/ files (AVX2 flags).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/gather_halves.h"
#include "kernels/matmul_driver.h"
#include "kernels/x86_avx2/panel_rows.h"
#include "kernels/x86_avx2/quant_simd.h"

namespace ridge::kernels::avx2_panel {
namespace {

constexpr int kRows = quant_avx2::kPanel;  // weight rows per panel, one per lane
constexpr int kDirectMaxM = 3;    // x rows served by one pass over the panel
constexpr int64_t kBlockBytes = 34;  // Q8_0: fp16 d, then 32 int8

// The fp16 scale at byte `at` of each row's block, as f32 (lane r: row r).
inline __m256 load_scales(const uint8_t* const* row, int64_t at) {
  uint64_t q[2];
  gather_halves(row, at, q);
  return _mm256_cvtph_ps(_mm_set_epi64x(static_cast<long long>(q[1]), static_cast<long long>(q[0])));
}

using quant_avx2::store_lanes;  // kRows == kPanel lanes (panel_rows.h)

// Row r's 32 products with x summed into 8 int32 lanes: |w| times x with w's sign (vpmaddubsw
// needs one unsigned operand; no pair saturates: |w| <= 128, |x| <= 127).
inline __m256i q8_0_partial(const uint8_t* blk, __m256i x, __m256i ones) {
  const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
  return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(x, q)), ones);
}

// Rows row[0..7] (past the matrix: repeats, results discarded) against x rows [0, MR) of a, all
// nb blocks; `ahead`: bytes from a row to the same row of the next panel, prefetched
// into L2 about once per 64 bytes of row. Stores the first n_valid lanes of each x row's 8
// outputs at y + i * ldy.
template <int MR>
void direct_panel(const uint8_t* const row[kRows], int64_t ahead, const Acts& a, int64_t nb, float* y,
                  int64_t ldy, int n_valid) {
  constexpr int64_t kPrefetchEvery = 64 / kBlockBytes;  // blocks per line, rounded down
  __m256 acc[MR];
  for (int i = 0; i < MR; ++i) acc[i] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t off = b * kBlockBytes;
    if (b % kPrefetchEvery == 0) {
      for (int r = 0; r < kRows; ++r) {
        _mm_prefetch(reinterpret_cast<const char*>(row[r] + off) + ahead, _MM_HINT_T1);
      }
    }
    const __m256 dw = load_scales(row, off);
    for (int i = 0; i < MR; ++i) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q8_qs + i * a.cols + b * 32));
      __m256i p[kRows];
      for (int r = 0; r < kRows; ++r) p[r] = q8_0_partial(row[r] + off, x, ones);
      const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(a.q8_d[i * nb + b]));
      acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(quant_avx2::fold8_epi32(p)), scale, acc[i]);
    }
  }
  for (int i = 0; i < MR; ++i) store_lanes(y + i * ldy, acc[i], n_valid);
}

}  // namespace
}  // namespace ridge::kernels::avx2_panel
