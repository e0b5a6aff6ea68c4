// AVX2 attention loops (see attention_kernels.h): K/V rows are converted 8 values at a time
// in registers (f16: vcvtph2ps (F16C), bf16: shift, q8_0: int8 -> f32 times the block scale, which is
// exactly the dequantized value) and used at once by up to 4 queries.
#include <immintrin.h>

#include <cstring>

#include "kv/kv_cache.h"
#include "model/attention_kernels.h"

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

// Queries [q0, q0 + N) against every row; each query has its own accumulator, so its score is
// the same whatever N is.
template <GgmlType T, int N>
void qk_rows(const uint8_t* k, uint64_t rb, int64_t n_rows, const AttnQueries& qs, int64_t q0,
             float scale, float* scores, int64_t ld) {
  const float* x[N];
  for (int n = 0; n < N; ++n) x[n] = qs.q_at(q0 + n);
  for (int64_t j = 0; j < n_rows; ++j) {
    const uint8_t* row = k + static_cast<uint64_t>(j) * rb;
    __m256 acc[N];
    for (int n = 0; n < N; ++n) acc[n] = _mm256_setzero_ps();
    for (int64_t i = 0; i < qs.hd; i += 8) {
      const __m256 kv = load8<T>(row, i);
      for (int n = 0; n < N; ++n) acc[n] = _mm256_fmadd_ps(_mm256_loadu_ps(x[n] + i), kv, acc[n]);
    }
    for (int n = 0; n < N; ++n) scores[(q0 + n) * ld + j] = hsum8(acc[n]) * scale;
  }
}

template <GgmlType T>
void qk_t(const void* k, int64_t n_rows, const AttnQueries& qs, float scale, float* scores,
          int64_t ld) {
  const auto* kb = static_cast<const uint8_t*>(k);
  const uint64_t rb = kv::kv_row_bytes(T, qs.hd);
  int64_t q = 0;
  for (; q + 4 <= qs.n_q; q += 4) qk_rows<T, 4>(kb, rb, n_rows, qs, q, scale, scores, ld);
  for (; q < qs.n_q; ++q) qk_rows<T, 1>(kb, rb, n_rows, qs, q, scale, scores, ld);
}

template <GgmlType T>
void pv_t(const void* v, int64_t n_rows, const float* p, int64_t ld, int64_t skip,
          const AttnQueries& qs) {
  const uint64_t rb = kv::kv_row_bytes(T, qs.hd);
  const int64_t n_tok = qs.n_q / qs.group;
  for (int64_t j = 0; j < n_rows; ++j) {
    const int64_t t0 = attn_first_query(j, skip, qs.group) / qs.group;
    if (t0 >= n_tok) break;
    const uint8_t* row = static_cast<const uint8_t*>(v) + static_cast<uint64_t>(j) * rb;
    for (int64_t i = 0; i < qs.hd; i += 8) {
      const __m256 vv = load8<T>(row, i);
      for (int64_t t = t0; t < n_tok; ++t) {
        for (int64_t h = 0; h < qs.group; ++h) {
          const int64_t q = t * qs.group + h;
          float* y = qs.out + t * qs.tok_stride + h * qs.hd + i;
          _mm256_storeu_ps(y, _mm256_fmadd_ps(_mm256_set1_ps(p[q * ld + j]), vv, _mm256_loadu_ps(y)));
        }
      }
    }
  }
}

void qk(GgmlType type, const void* k, int64_t n_rows, const AttnQueries& qs, float scale,
        float* scores, int64_t ld) {
  switch (type) {
    case GgmlType::kF32: return qk_t<GgmlType::kF32>(k, n_rows, qs, scale, scores, ld);
    case GgmlType::kF16: return qk_t<GgmlType::kF16>(k, n_rows, qs, scale, scores, ld);
    case GgmlType::kBF16: return qk_t<GgmlType::kBF16>(k, n_rows, qs, scale, scores, ld);
    default: return qk_t<GgmlType::kQ8_0>(k, n_rows, qs, scale, scores, ld);
  }
}

void pv(GgmlType type, const void* v, int64_t n_rows, const float* p, int64_t ld, int64_t skip,
        const AttnQueries& qs) {
  switch (type) {
    case GgmlType::kF32: return pv_t<GgmlType::kF32>(v, n_rows, p, ld, skip, qs);
    case GgmlType::kF16: return pv_t<GgmlType::kF16>(v, n_rows, p, ld, skip, qs);
    case GgmlType::kBF16: return pv_t<GgmlType::kBF16>(v, n_rows, p, ld, skip, qs);
    default: return pv_t<GgmlType::kQ8_0>(v, n_rows, p, ld, skip, qs);
  }
}

}  // namespace

const AttnKernels& attn_kernels_avx2() {
  static const AttnKernels k{qk, pv};
  return k;
}

}  // namespace ridge::model
