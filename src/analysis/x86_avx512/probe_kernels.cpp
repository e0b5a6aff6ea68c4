// AVX-512 (F, VNNI, BF16) probe loops (see analysis/probe_kernels.h).
#include <immintrin.h>

#include "analysis/probe_kernels.h"
#include "analysis/probe_mem_loops.h"

namespace ridge::analysis::probe_kernels::avx512 {
namespace {

// Horizontal sums through memory (GCC 12's _mm512_reduce_* trip -Wuninitialized).
float hsum(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float s = 0;
  for (float x : lanes) s += x;
  return s;
}

int32_t hsum(__m512i v) {
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, v);
  int32_t s = 0;
  for (int32_t x : lanes) s += x;
  return s;
}

struct Zmm {
  using Vec = __m512;
  static constexpr size_t kFloats = 16;
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec load(const float* p) { return _mm512_load_ps(p); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static void store(float* p, Vec v) { _mm512_store_ps(p, v); }
  static void stream(float* p, Vec v) { _mm512_stream_ps(p, v); }
  static float hsum(Vec v) { return avx512::hsum(v); }
};

}  // namespace

float read_sum(const float* p, size_t n, const MemLoop& loop) {
  return detail::read_sum<Zmm>(p, n, loop);
}

void copy(float* dst, const float* src, size_t n, const MemLoop& loop) {
  detail::copy<Zmm>(dst, src, n, loop);
}

float fma_loop(int64_t iters) {
  const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
  __m512 a[12];
  for (int k = 0; k < 12; ++k) a[k] = _mm512_set1_ps(static_cast<float>(k));
  for (int64_t it = 0; it < iters; ++it) {
    for (int k = 0; k < 12; ++k) a[k] = _mm512_fmadd_ps(a[k], m, c);
  }
  __m512 s = a[0];
  for (int k = 1; k < 12; ++k) s = _mm512_add_ps(s, a[k]);
  return hsum(s);
}

int32_t int8_loop(int64_t iters) {
  const __m512i u = _mm512_set1_epi8(1), s8 = _mm512_set1_epi8(-1);
  __m512i acc[12];
  for (int k = 0; k < 12; ++k) acc[k] = _mm512_set1_epi32(k);
  for (int64_t it = 0; it < iters; ++it) {
    for (int k = 0; k < 12; ++k) acc[k] = _mm512_dpbusd_epi32(acc[k], u, s8);
  }
  __m512i s = acc[0];
  for (int k = 1; k < 12; ++k) s = _mm512_add_epi32(s, acc[k]);
  return hsum(s);
}

float bf16_loop(int64_t iters) {
  // 0.0 x anything keeps every accumulator finite; the instruction still runs at full rate.
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.0f), _mm512_set1_ps(0.0f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1.0f), _mm512_set1_ps(1.0f));
  __m512 acc[12];
  for (int k = 0; k < 12; ++k) acc[k] = _mm512_set1_ps(static_cast<float>(k));
  for (int64_t it = 0; it < iters; ++it) {
    for (int k = 0; k < 12; ++k) acc[k] = _mm512_dpbf16_ps(acc[k], a, b);
  }
  __m512 s = acc[0];
  for (int k = 1; k < 12; ++k) s = _mm512_add_ps(s, acc[k]);
  return hsum(s);
}

}  // namespace ridge::analysis::probe_kernels::avx512
