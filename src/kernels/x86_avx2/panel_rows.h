// The panel skeleton shared by the AVX2 kernels that read 8 weight rows side by side, one row per
// f32 lane (mxfp4.cpp, grid_formats.cpp). Include only from files compiled with the AVX2 flags;
// internal linkage, so no ISA-flagged copy can be picked by the linker for other code.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/matmul_driver.h"

namespace ridge::kernels::quant_avx2 {
namespace {

constexpr int kPanel = 8;            // weight rows per panel, one per lane
constexpr int kMaxMr = 4;            // x rows sharing one unpacked block

// Pairwise sums of signed table bytes w times x: |w| times x with w's sign (pairs <= 2 * 127 * 127).
inline __m256i signed_pairs(__m256i w, __m256i x) {
  return _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
}

// The 8 rows of the panel at weight row j (past j1: the last valid row again, results discarded).
inline void panel_row_pointers(const WeightView& w, int64_t j, int n_valid, const uint8_t** row) {
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int r = 0; r < kPanel; ++r) {
    row[r] = base + static_cast<uint64_t>(j + (r < n_valid ? r : n_valid - 1)) * w.row_bytes;
  }
}

// run(std::integral_constant<int, MR>, i0) for the x rows [0, m), kMaxMr at a time, then the rest.
template <typename Run>
inline void by_row_groups(int64_t m, const Run& run) {
  int64_t i = 0;
  for (; i + kMaxMr <= m; i += kMaxMr) run(std::integral_constant<int, kMaxMr>{}, i);
  switch (m - i) {
    case 1: return run(std::integral_constant<int, 1>{}, i);
    case 2: return run(std::integral_constant<int, 2>{}, i);
    case 3: return run(std::integral_constant<int, 3>{}, i);
    default: return;
  }
}

// v as an opaque value: what reaches the next operation is the rounded product, not a multiply
// the compiler may fuse into a following add.
inline __m256 rounded(__m256 v) {
  __asm__("" : "+v"(v));
  return v;
}

// The first n_valid of v's 8 lanes to y.
inline void store_lanes(float* y, __m256 v, int n_valid) {
  if (n_valid == kPanel) {
    _mm256_storeu_ps(y, v);
  } else {
    alignas(32) float tmp[kPanel];
    _mm256_store_ps(tmp, v);
    std::memcpy(y, tmp, static_cast<size_t>(n_valid) * sizeof(float));
  }
}

}  // namespace
}  // namespace ridge::kernels::quant_avx2
