// AVX-512 Q8_K activation quantizer: the same bytes as kernels::quantize_act_row_q8_k
// (kernels/quant/act_q8_k.cpp), which branches on every element.
//
// Per 256-element block: amax by max_ps with the running maximum as the second operand, so a NaN
// element never wins (as the reference's compare); id = 127 / amax and d = 1 / id in scalar f32
// as in the reference; q = x * id clamped to [-127, 127] by min then max (a NaN product becomes
// 127, as in the reference) and rounded half to even by roundscale; bsums by 16-lane reductions.
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12 _mm512_undefined_* (act_q8_0.cpp)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/x86_avx512/avx512.h"

namespace ridge::kernels::avx512 {

void quantize_act_row_q8_k(const float* x, int64_t n, int8_t* qs, float* d, int16_t* bsums) {
  constexpr int64_t kBlock = 256;
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const float* xb = x + b * kBlock;
    __m512 acc = _mm512_setzero_ps();
    for (int k = 0; k < kBlock; k += 16) acc = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(xb + k)), acc);
    const float amax = _mm512_reduce_max_ps(acc);
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    d[b] = amax > 0.0f ? 1.0f / id : 0.0f;
    const __m512 vid = _mm512_set1_ps(id);
    for (int g = 0; g < 16; ++g) {
      __m512 v = _mm512_mul_ps(_mm512_loadu_ps(xb + 16 * g), vid);
      v = _mm512_max_ps(_mm512_min_ps(v, _mm512_set1_ps(127.0f)), _mm512_set1_ps(-127.0f));
      const __m512i q =
          _mm512_cvttps_epi32(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + b * kBlock + 16 * g), _mm512_cvtepi32_epi8(q));
      bsums[b * 16 + g] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
  }
}

}  // namespace ridge::kernels::avx512
