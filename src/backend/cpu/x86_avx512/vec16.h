// 16 f32 lanes of AVX-512 for backend/cpu/simd_math.h and the attention tiles; include only from the
// files of this directory (compiled with AVX-512 flags).
#pragma once

#include <immintrin.h>

#include "kernels/x86_avx512/quant_simd.h"

namespace ridge::backend::cpu {
namespace {

struct Vec16 {
  using Reg = __m512;
  static constexpr int kLanes = 16;
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg set1(float x) { return _mm512_set1_ps(x); }
  static Reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm512_div_ps(a, b); }
  static Reg max(Reg a, Reg b) { return _mm512_max_ps(a, b); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg fnmadd(Reg a, Reg b, Reg c) { return _mm512_fnmadd_ps(a, b, c); }
  static Reg abs(Reg a) { return _mm512_abs_ps(a); }
  static Reg round_even(Reg a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static Reg scale_pow2(Reg p, Reg n) { return _mm512_scalef_ps(p, n); }
  static Reg select_neg(Reg g, Reg a, Reg b) {
    return _mm512_mask_mov_ps(b, _mm512_cmp_ps_mask(g, _mm512_setzero_ps(), _CMP_LT_OQ), a);
  }
  static Reg first_lanes(Reg r, int k) { return _mm512_maskz_mov_ps(static_cast<__mmask16>((1u << k) - 1u), r); }
  static float hsum(Reg r) { return kernels::quant_avx512::hsum16(r); }
  static float hmax(Reg r) { return _mm512_reduce_max_ps(r); }
};

}  // namespace
}  // namespace ridge::backend::cpu
