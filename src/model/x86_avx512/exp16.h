// e^x in 16 AVX-512 lanes, for the files of this directory only (compiled with AVX-512 flags:
// include it nowhere else).
#pragma once

#include <immintrin.h>

namespace ridge::model {
namespace {

// e^x for x <= 0 (scores minus their max): 2^n * e^r with n = round(x / ln 2), |r| <= ln 2 / 2,
// e^r by its degree-7 Taylor polynomial (relative error < 1e-8 before rounding).
inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));  // below: 0 after scaling
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  for (float c : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f}) {
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  }
  return _mm512_scalef_ps(p, n);
}

}  // namespace
}  // namespace ridge::model
