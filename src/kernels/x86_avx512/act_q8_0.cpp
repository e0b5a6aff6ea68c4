// AVX-512 Q8_0 activation quantizer: the same bytes as quantize_act_row_q8_0 (matmul_driver.cpp),
// about 10x faster (the scalar rounding branches on every element).
//
// Per block: amax by max_ps (exact); d = amax / 127 and id = 127 / amax in scalar f32 as in the
// reference; q = x * id rounded half to even (roundscale, as ggml's _mm256_round_ps); d rounded
// to fp16 by F16C (round to nearest even, as tensor/fp16.h). NaN activations give unspecified
// (but defined) blocks.
// GCC 12's _mm512_undefined_*() self-initializes a local, which -Wuninitialized reports when
// such intrinsics are inlined at -O3 (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/x86_avx512/avx512.h"

namespace ridge::kernels::avx512 {
namespace {

inline __m512i quantize16(__m512 x, __m512 id) {
  __m512 v = _mm512_mul_ps(x, id);
  v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);  // NaN -> 0
  v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  return _mm512_cvttps_epi32(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

}  // namespace

void quantize_act_row_q8_0(const float* x, int64_t n, int8_t* qs, float* d, int32_t* sums) {
  for (int64_t b = 0; b < n / 32; ++b) {
    const __m512 x0 = _mm512_loadu_ps(x + 32 * b);
    const __m512 x1 = _mm512_loadu_ps(x + 32 * b + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
    const float db = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const __m512i q0 = quantize16(x0, _mm512_set1_ps(id));
    const __m512i q1 = quantize16(x1, _mm512_set1_ps(id));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 32 * b), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 32 * b + 16), _mm512_cvtepi32_epi8(q1));
    sums[b] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    d[b] = _cvtsh_ss(_cvtss_sh(db, _MM_FROUND_TO_NEAREST_INT));
  }
}

}  // namespace ridge::kernels::avx512
