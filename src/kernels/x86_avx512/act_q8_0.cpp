// AVX-512 Q8_0 activation quantizer: the same bytes as quantize_act_row_q8_0 (matmul_driver.cpp),
// about 10x faster (the scalar rounding branches on every element).
//
// Per block: amax by max_ps (exact); d = amax / 127 and id = 1 / d in scalar f32 as in the
// reference; q = x * id rounded half away from zero as trunc + (|frac| >= 0.5 ? sign : 0), which
// equals roundf exactly for |v| < 2^23; d rounded to fp16 by F16C (round to nearest even, as
// tensor/fp16.h). NaN activations give unspecified (but defined) blocks.
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
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_sub_ps(v, t);
  const __m512 abs_frac = _mm512_abs_ps(frac);
  const __mmask16 up = _mm512_cmp_ps_mask(abs_frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 sign_one = _mm512_or_ps(_mm512_set1_ps(1.0f),
                                       _mm512_and_ps(v, _mm512_set1_ps(-0.0f)));
  return _mm512_cvttps_epi32(_mm512_mask_add_ps(t, up, t, sign_one));
}

}  // namespace

void quantize_act_row_q8_0(const float* x, int64_t n, int8_t* qs, float* d, int32_t* sums) {
  for (int64_t b = 0; b < n / 32; ++b) {
    const __m512 x0 = _mm512_loadu_ps(x + 32 * b);
    const __m512 x1 = _mm512_loadu_ps(x + 32 * b + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    const __m512i q0 = quantize16(x0, _mm512_set1_ps(id));
    const __m512i q1 = quantize16(x1, _mm512_set1_ps(id));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 32 * b), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 32 * b + 16), _mm512_cvtepi32_epi8(q1));
    sums[b] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    d[b] = _cvtsh_ss(_cvtss_sh(db, _MM_FROUND_TO_NEAREST_INT));
  }
}

}  // namespace ridge::kernels::avx512
