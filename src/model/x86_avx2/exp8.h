// e^x in 8 AVX2 lanes, for the files of this directory only (compiled with AVX2 flags: include
// it nowhere else). The algorithm of x86_avx512/exp16.h.
#pragma once

#include <immintrin.h>

namespace ridge::model {
namespace {

// e^x for x <= 0: 2^n * e^r with n = round(x / ln 2), |r| <= ln 2 / 2, e^r by its degree-7
// Taylor polynomial. AVX2 has no vscalefps: 2^n is applied as 2^a * 2^(n - a), a = n / 2, each
// factor a normal float for n >= -150, so only the last product rounds (as scalef's one rounding).
inline __m256 exp8(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-104.0f));  // below: 0 after scaling
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187045e-06f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  for (float c : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f}) {
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
  }
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i a = _mm256_srai_epi32(ni, 1);
  const __m256i b = _mm256_sub_epi32(ni, a);
  const auto pow2 = [](__m256i e) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
  };
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2(a)), pow2(b));
}

}  // namespace
}  // namespace ridge::model
