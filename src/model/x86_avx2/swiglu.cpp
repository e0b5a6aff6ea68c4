// SwiGLU, out = silu(gate) * up, 8 lanes at a time with the polynomial e^x of exp8.h (the
// AVX-512 file's algorithm; the scalar loop makes one libm call per element).
#include <immintrin.h>

#include <algorithm>

#include "model/ops.h"
#include "model/x86_avx2/exp8.h"

namespace ridge::model {
namespace {

// silu(g) = g * sigmoid(g) with e = e^-|g| <= 1, so nothing overflows: sigmoid(g) = 1 / (1 + e)
// for g >= 0 and e / (1 + e) below.
inline __m256 silu8(__m256 g) {
  const __m256 abs = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), g);
  const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), abs));
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 neg = _mm256_cmp_ps(g, _mm256_setzero_ps(), _CMP_LT_OQ);
  const __m256 num = _mm256_blendv_ps(one, e, neg);
  return _mm256_mul_ps(g, _mm256_div_ps(num, _mm256_add_ps(one, e)));
}

}  // namespace

void swiglu_avx2(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 s = silu8(_mm256_loadu_ps(gate + i));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
  }
  if (i < n) {  // the tail through a zero-padded copy
    alignas(32) float g[8] = {}, u[8] = {}, o[8];
    std::copy(gate + i, gate + n, g);
    std::copy(up + i, up + n, u);
    _mm256_store_ps(o, _mm256_mul_ps(silu8(_mm256_load_ps(g)), _mm256_load_ps(u)));
    std::copy(o, o + (n - i), out + i);
  }
}

}  // namespace ridge::model
