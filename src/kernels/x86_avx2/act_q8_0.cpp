// AVX2 Q8_0 activation quantizer: the same bytes as quantize_act_row_q8_0 (matmul_driver.cpp);
// see x86_avx512/act_q8_0.cpp for the rounding argument.
#include <immintrin.h>

#include "kernels/x86_avx2/avx2.h"
#include "kernels/x86_avx2/quant_simd.h"

namespace ridge::kernels::avx2 {
namespace {

inline __m256i quantize8(__m256 x, __m256 id) {
  __m256 v = _mm256_mul_ps(x, id);
  v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));  // NaN -> 0
  v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
  return _mm256_cvttps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

}  // namespace

void quantize_act_row_q8_0(const float* x, int64_t n, int8_t* qs, float* d, int32_t* sums) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t b = 0; b < n / 32; ++b) {
    __m256 xv[4];
    __m256 m = _mm256_setzero_ps();
    for (int h = 0; h < 4; ++h) {
      xv[h] = _mm256_loadu_ps(x + 32 * b + 8 * h);
      m = _mm256_max_ps(m, _mm256_and_ps(xv[h], abs_mask));
    }
    const float amax = quant_avx2::hmax8(m);
    const float db = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    __m256i q[4];
    for (int h = 0; h < 4; ++h) q[h] = quantize8(xv[h], _mm256_set1_ps(id));
    const __m256i bytes = quant_avx2::pack_bytes32(q);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + 32 * b), bytes);
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
    sums[b] = _mm_cvtsi128_si32(s4);
    d[b] = _cvtsh_ss(_cvtss_sh(db, _MM_FROUND_TO_NEAREST_INT));
  }
}

}  // namespace ridge::kernels::avx2
