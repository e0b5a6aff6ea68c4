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

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

}  // namespace
}  // namespace ridge::kernels::quant_avx2
