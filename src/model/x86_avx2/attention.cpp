// AVX2 attention loops (see attention_kernels.h): K/V rows are converted 8 values at a time
// in registers (f16: vcvtph2ps (F16C), bf16: shift, q8_0: int8 -> f32 times the block scale, which is
// exactly the dequantized value) and used at once by up to 4 queries; several K rows per pass,
// V sums held in registers over the rows.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kv/kv_cache.h"
#include "model/attention_kernels.h"
#include "model/attention_tiles.h"
#include "model/x86_avx2/exp8.h"

namespace ridge::model {
namespace {

// Values [i, i + 8) of a row (i a multiple of 8) as f32.
template <GgmlType T>
inline __m256 load8(const uint8_t* row, int64_t i) {
  if constexpr (T == GgmlType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else if constexpr (T == GgmlType::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
  } else if constexpr (T == GgmlType::kBF16) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else {
    const uint8_t* blk = row + i / kv::kQ8Block * kv::kQ8BlockBytes;
    uint16_t dh;
    std::memcpy(&dh, blk, 2);
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + i % kv::kQ8Block));
    return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(dh)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
  }
}

// A fixed reduction tree (the same for every call).
inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// The vector operations attention_tiles.h runs on: 8 lanes.
struct Avx2 {
  using Reg = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kQkRows = 2;
  static constexpr int kPvCols = 2;
  template <GgmlType T>
  static Reg load(const uint8_t* row, int64_t i) { return load8<T>(row, i); }
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, Reg r) { _mm256_storeu_ps(p, r); }
  static Reg set1(float x) { return _mm256_set1_ps(x); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static float hsum(Reg r) { return hsum8(r); }
  static constexpr int kSumBatch = 0;
  static void sum_batch(const Reg*, float, float*, int64_t) {}
};

// Softmax over n values, 8 lanes (the tail through a padded copy, its extra lanes zeroed
// after the exp); the sums reduce in a fixed order. The algorithm of the AVX-512 softmax16.
void softmax8(float* x, int64_t n) {
  const int64_t n8 = n / 8 * 8;
  const int64_t rest = n - n8;
  alignas(32) float tail[8];
  for (int k = 0; k < 8; ++k) tail[k] = k < rest ? x[n8 + k] : -INFINITY;
  __m256 mx = _mm256_load_ps(tail);
  for (int64_t i = 0; i < n8; i += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(x + i));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  const __m256 m = _mm256_set1_ps(_mm_cvtss_f32(m4));
  __m256 sum = _mm256_setzero_ps();
  for (int64_t i = 0; i < n8; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
    _mm256_storeu_ps(x + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (rest != 0) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rest)), lane));
    const __m256 e = _mm256_and_ps(keep, exp8(_mm256_sub_ps(_mm256_load_ps(tail), m)));
    _mm256_store_ps(tail, e);
    sum = _mm256_add_ps(sum, e);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / hsum8(sum));
  for (int64_t i = 0; i < n8; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
  for (int64_t k = 0; k < rest; ++k) x[n8 + k] = tail[k] * _mm_cvtss_f32(_mm256_castps256_ps128(inv));
}

}  // namespace

const AttnKernels& attn_kernels_avx2() {
  static const AttnKernels k{qk_simd<Avx2>, pv_simd<Avx2>, softmax8};
  return k;
}

}  // namespace ridge::model
