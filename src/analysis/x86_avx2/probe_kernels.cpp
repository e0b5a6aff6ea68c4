// AVX2 + FMA probe loops (see analysis/probe_kernels.h).
#include <immintrin.h>

#include "analysis/probe_kernels.h"
#include "analysis/probe_mem_loops.h"

namespace ridge::analysis::probe_kernels::avx2 {

namespace {

struct Ymm {
  using Vec = __m256;
  static constexpr size_t kFloats = 8;
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec load(const float* p) { return _mm256_load_ps(p); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static void store(float* p, Vec v) { _mm256_store_ps(p, v); }
  static void stream(float* p, Vec v) { _mm256_stream_ps(p, v); }
  static float hsum(Vec v) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, v);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3] + lanes[4] + lanes[5] + lanes[6] + lanes[7];
  }
};

}  // namespace

float read_sum(const float* p, size_t n, const MemLoop& loop) {
  return detail::read_sum<Ymm>(p, n, loop);
}

void copy(float* dst, const float* src, size_t n, const MemLoop& loop) {
  detail::copy<Ymm>(dst, src, n, loop);
}

float fma_loop(int64_t iters) {
  // acc = acc * 0.999 + 0.001 converges to 1: no overflow, no denormals.
  const __m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
  __m256 a[12];
  for (int k = 0; k < 12; ++k) a[k] = _mm256_set1_ps(static_cast<float>(k));
  for (int64_t it = 0; it < iters; ++it) {
    for (int k = 0; k < 12; ++k) a[k] = _mm256_fmadd_ps(a[k], m, c);
  }
  __m256 s = a[0];
  for (int k = 1; k < 12; ++k) s = _mm256_add_ps(s, a[k]);
  return _mm256_cvtss_f32(s);
}

int32_t int8_loop(int64_t iters) {
  // The sequence of ridge's AVX2 quantized dot products: u8 x s8 -> i16 pairs -> i32 -> add.
  // x feeds back into itself so the multiply cannot be hoisted out of the loop.
  const __m256i w = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
  __m256i x[8], acc[8];
  for (int k = 0; k < 8; ++k) {
    x[k] = _mm256_set1_epi8(static_cast<char>(k + 1));
    acc[k] = _mm256_setzero_si256();
  }
  for (int64_t it = 0; it < iters; ++it) {
    for (int k = 0; k < 8; ++k) {
      x[k] = _mm256_maddubs_epi16(x[k], w);
      acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(x[k], ones));
    }
  }
  __m256i s = acc[0];
  for (int k = 1; k < 8; ++k) s = _mm256_add_epi32(s, acc[k]);
  return _mm256_extract_epi32(s, 0) + _mm256_extract_epi32(s, 7);
}

}  // namespace ridge::analysis::probe_kernels::avx2
