// 8 f32 lanes of AVX2 for backend/cpu/simd_math.h and the attention tiles; include only from the
// files of this directory (compiled with AVX2 flags).
#pragma once

#include <immintrin.h>

#include "kernels/x86_avx2/quant_simd.h"

namespace ridge::backend::cpu {
namespace {

struct Vec8 {
  using Reg = __m256;
  static constexpr int kLanes = 8;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg set1(float x) { return _mm256_set1_ps(x); }
  static Reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, Reg r) { _mm256_storeu_ps(p, r); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm256_div_ps(a, b); }
  static Reg max(Reg a, Reg b) { return _mm256_max_ps(a, b); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg fnmadd(Reg a, Reg b, Reg c) { return _mm256_fnmadd_ps(a, b, c); }
  static Reg abs(Reg a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  static Reg round_even(Reg a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // No vscalefps: 2^n as 2^a 2^(n - a), a = n / 2, each a normal float for n >= -150, so only
  // the last product rounds (as scalef's one rounding).
  static Reg scale_pow2(Reg p, Reg n) {
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i a = _mm256_srai_epi32(ni, 1);
    const auto pow2 = [](__m256i e) {
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
    };
    return _mm256_mul_ps(_mm256_mul_ps(p, pow2(a)), pow2(_mm256_sub_epi32(ni, a)));
  }
  static Reg select_neg(Reg g, Reg a, Reg b) {
    return _mm256_blendv_ps(b, a, _mm256_cmp_ps(g, _mm256_setzero_ps(), _CMP_LT_OQ));
  }
  static Reg first_lanes(Reg r, int k) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_ps(r, _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(k), lane)));
  }
  // Fixed reduction trees: the 128-bit halves, then lanes (0 + 2, 1 + 3), then those two.
  static float hsum(Reg v) { return kernels::quant_avx2::hsum8(v); }
  static float hmax(Reg v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace
}  // namespace ridge::backend::cpu
