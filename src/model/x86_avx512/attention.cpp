// AVX-512 attention loops (see attention_kernels.h): K/V rows are converted 16 values at a time
// in registers (f16: vcvtph2ps, bf16: shift, q8_0: int8 -> f32 times the block scale, which is
// exactly the dequantized value) and used at once by up to 4 queries; several K rows per pass,
// V sums held in registers over the rows.
// GCC 12's AVX-512 headers leave the pass-through operand of many intrinsics undefined (GCC bug
// 105593); -Wmaybe-uninitialized then fires inside our functions.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kv/kv_cache.h"
#include "model/attention_kernels.h"
#include "model/attention_tiles.h"
#include "model/x86_avx512/exp16.h"

namespace ridge::model {
namespace {

// Values [i, i + 16) of a row (i a multiple of 16) as f32.
template <GgmlType T>
inline __m512 load16(const uint8_t* row, int64_t i) {
  if constexpr (T == GgmlType::kF32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else if constexpr (T == GgmlType::kF16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * i)));
  } else if constexpr (T == GgmlType::kBF16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else {
    const uint8_t* blk = row + i / kv::kQ8Block * kv::kQ8BlockBytes;
    uint16_t dh;
    std::memcpy(&dh, blk, 2);
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + i % kv::kQ8Block));
    return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(dh)), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
  }
}

// The vector operations attention_tiles.h runs on: 16 lanes.
struct Avx512 {
  using Reg = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kQkRows = 4;
  static constexpr int kPvCols = 4;
  template <GgmlType T>
  static Reg load(const uint8_t* row, int64_t i) { return load16<T>(row, i); }
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static Reg set1(float x) { return _mm512_set1_ps(x); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static float hsum(Reg r) { return _mm512_reduce_add_ps(r); }
};

// Softmax over n values, 16 lanes with a masked tail; the sums reduce in a fixed order.
void softmax16(float* x, int64_t n) {
  const int64_t n16 = n / 16 * 16;
  const auto tail = static_cast<__mmask16>((1u << (n - n16)) - 1u);
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < n16; i += 16) mx = _mm512_max_ps(mx, _mm512_loadu_ps(x + i));
  mx = _mm512_mask_max_ps(mx, tail, mx, _mm512_maskz_loadu_ps(tail, x + n16));
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n16; i += 16) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), m));
    _mm512_storeu_ps(x + i, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (tail != 0) {
    const __m512 e = _mm512_maskz_mov_ps(tail, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + n16), m)));
    _mm512_mask_storeu_ps(x + n16, tail, e);
    sum = _mm512_add_ps(sum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  for (int64_t i = 0; i < n16; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), inv));
  _mm512_mask_storeu_ps(x + n16, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, x + n16), inv));
}

}  // namespace

const AttnKernels& attn_kernels_avx512() {
  static const AttnKernels k{qk_simd<Avx512>, pv_simd<Avx512>, softmax16};
  return k;
}

}  // namespace ridge::model
