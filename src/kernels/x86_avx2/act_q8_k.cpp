// AVX2 Q8_K activation quantizer: the same bytes as kernels::quantize_act_row_q8_k
// (kernels/quant/act_q8_k.cpp), which branches on every element; the AVX-512 routine
// (x86_avx512/act_q8_k.cpp) in 8 lanes.
//
// Per 256-element block: amax by max_ps with the running maximum as the second operand, so a NaN
// element never wins (as the reference's compare); id = 127 / amax and d = 1 / id in scalar f32
// as in the reference; q = x * id clamped by min then max with the bound second (a NaN product
// becomes 127, as in the reference), rounded half to even; each 16 q's sum is a bsum.
#include <immintrin.h>

#include "kernels/x86_avx2/avx2.h"
#include "kernels/x86_avx2/quant_simd.h"

namespace ridge::kernels::avx2 {
namespace {

inline __m256i quantize8(const float* x, __m256 id) {
  __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x), id);
  v = _mm256_max_ps(_mm256_min_ps(v, _mm256_set1_ps(127.0f)), _mm256_set1_ps(-127.0f));
  return _mm256_cvttps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

}  // namespace

void quantize_act_row_q8_k(const float* x, int64_t n, int8_t* qs, float* d, int16_t* bsums) {
  constexpr int64_t kBlock = 256;
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const float* xb = x + b * kBlock;
    __m256 acc = _mm256_setzero_ps();
    for (int k = 0; k < kBlock; k += 8) acc = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(xb + k), abs_mask), acc);
    const float amax = quant_avx2::hmax8(acc);
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    d[b] = amax > 0.0f ? 1.0f / id : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    for (int g = 0; g < 16; g += 2) {  // 32 elements: bsums g and g + 1
      __m256i q[4];
      for (int h = 0; h < 4; ++h) q[h] = quantize8(xb + 16 * g + 8 * h, vid);
      const __m256i bytes = quant_avx2::pack_bytes32(q);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + b * kBlock + 16 * g), bytes);
      // lanes of q[0] + q[1] (the first 16) and q[2] + q[3], each folded to one sum
      const __m256i s = _mm256_hadd_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
      __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
      s4 = _mm_hadd_epi32(s4, s4);  // (first, second, first, second)
      bsums[b * 16 + g] = static_cast<int16_t>(_mm_cvtsi128_si32(s4));
      bsums[b * 16 + g + 1] = static_cast<int16_t>(_mm_extract_epi32(s4, 1));
    }
  }
}

}  // namespace ridge::kernels::avx2
