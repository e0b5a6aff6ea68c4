// AVX2 attention loops (see attention_kernels.h): K/V rows are converted 8 values at a time
// in registers (f16: vcvtph2ps (F16C), bf16: shift, q8_0: int8 -> f32 times the block scale, which is
// exactly the dequantized value) and used at once by up to 4 queries; several K rows per pass,
// V sums held in registers over the rows.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kv/kv_cache.h"
#include "model/attention_kernels.h"
#include "model/ops.h"

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

// Queries [q0, q0 + NQ) against rows [j0, j0 + R): every (query, row) pair has its own
// accumulator, so a score is the same whatever NQ and R are (they only interleave the chains).
template <GgmlType T, int NQ, int R>
inline void qk_tile(const uint8_t* k, uint64_t rb, int64_t j0, const float* const* x, int64_t hd,
                    float scale, float* scores, int64_t ld) {
  __m256 acc[NQ][R];
  for (int n = 0; n < NQ; ++n) {
    for (int r = 0; r < R; ++r) acc[n][r] = _mm256_setzero_ps();
  }
  for (int64_t i = 0; i < hd; i += 8) {
    __m256 kv[R];
    for (int r = 0; r < R; ++r) kv[r] = load8<T>(k + static_cast<uint64_t>(j0 + r) * rb, i);
    for (int n = 0; n < NQ; ++n) {
      const __m256 xq = _mm256_loadu_ps(x[n] + i);
      for (int r = 0; r < R; ++r) acc[n][r] = _mm256_fmadd_ps(xq, kv[r], acc[n][r]);
    }
  }
  for (int n = 0; n < NQ; ++n) {
    for (int r = 0; r < R; ++r) scores[n * ld + j0 + r] = hsum8(acc[n][r]) * scale;
  }
}

template <GgmlType T, int NQ>
void qk_rows(const uint8_t* k, uint64_t rb, int64_t n_rows, const AttnQueries& qs, int64_t q0,
             float scale, float* scores, int64_t ld) {
  const float* x[NQ];
  for (int n = 0; n < NQ; ++n) x[n] = qs.q_at(q0 + n);
  const int64_t hd = qs.hd;
  float* s = scores + q0 * ld;
  int64_t j = 0;
  for (; j + 2 <= n_rows; j += 2) qk_tile<T, NQ, 2>(k, rb, j, x, hd, scale, s, ld);
  for (; j < n_rows; ++j) qk_tile<T, NQ, 1>(k, rb, j, x, hd, scale, s, ld);
}

template <GgmlType T>
void qk_t(const void* k, int64_t n_rows, const AttnQueries& qs, float scale, float* scores,
          int64_t ld) {
  const auto* kb = static_cast<const uint8_t*>(k);
  const uint64_t rb = kv::kv_row_bytes(T, qs.hd);
  int64_t q = 0;
  for (; q + 4 <= qs.n_q; q += 4) qk_rows<T, 4>(kb, rb, n_rows, qs, q, scale, scores, ld);
  switch (qs.n_q - q) {
    case 3: return qk_rows<T, 3>(kb, rb, n_rows, qs, q, scale, scores, ld);
    case 2: return qk_rows<T, 2>(kb, rb, n_rows, qs, q, scale, scores, ld);
    case 1: return qk_rows<T, 1>(kb, rb, n_rows, qs, q, scale, scores, ld);
    default: return;
  }
}

// out[n][i0, i0 + 8 NV) += p[n][j] * V_j[i0, ...) for rows j in [0, n_rows), ascending, with
// the sums held in registers over the rows (the same operations as one row at a time).
template <GgmlType T, int NQ, int NV>
inline void pv_tile(const uint8_t* v, uint64_t rb, int64_t n_rows, const float* const* p,
                    float* const* out, int64_t i0) {
  __m256 acc[NQ][NV];
  for (int n = 0; n < NQ; ++n) {
    for (int c = 0; c < NV; ++c) acc[n][c] = _mm256_loadu_ps(out[n] + i0 + 8 * c);
  }
  for (int64_t j = 0; j < n_rows; ++j) {
    const uint8_t* row = v + static_cast<uint64_t>(j) * rb;
    __m256 vv[NV];
    for (int c = 0; c < NV; ++c) vv[c] = load8<T>(row, i0 + 8 * c);
    for (int n = 0; n < NQ; ++n) {
      const __m256 w = _mm256_set1_ps(p[n][j]);
      for (int c = 0; c < NV; ++c) acc[n][c] = _mm256_fmadd_ps(w, vv[c], acc[n][c]);
    }
  }
  for (int n = 0; n < NQ; ++n) {
    for (int c = 0; c < NV; ++c) _mm256_storeu_ps(out[n] + i0 + 8 * c, acc[n][c]);
  }
}

template <GgmlType T, int NQ>
void pv_queries(const uint8_t* v, uint64_t rb, int64_t n_rows, const float* const* p,
                float* const* out, int64_t hd) {
  int64_t i = 0;
  for (; i + 16 <= hd; i += 16) pv_tile<T, NQ, 2>(v, rb, n_rows, p, out, i);
  for (; i < hd; i += 8) pv_tile<T, NQ, 1>(v, rb, n_rows, p, out, i);
}

template <GgmlType T>
void pv_t(const void* v, int64_t n_rows, const float* p, int64_t ld, int64_t skip,
          const AttnQueries& qs) {
  const auto* vb = static_cast<const uint8_t*>(v);
  const uint64_t rb = kv::kv_row_bytes(T, qs.hd);
  for (int64_t q = 0; q < qs.n_q;) {
    // Query q sees rows j with q / group >= j + skip (causal within the tile).
    const int64_t rows = std::min(n_rows, q / qs.group - skip + 1);
    const int64_t n = std::min<int64_t>(4, qs.group - q % qs.group);  // same token: same rows
    if (rows > 0) {
      const float* pp[4];
      float* oo[4];
      for (int64_t m = 0; m < n; ++m) {
        pp[m] = p + (q + m) * ld;
        oo[m] = qs.out_at(q + m);
      }
      switch (n) {
        case 4: pv_queries<T, 4>(vb, rb, rows, pp, oo, qs.hd); break;
        case 3: pv_queries<T, 3>(vb, rb, rows, pp, oo, qs.hd); break;
        case 2: pv_queries<T, 2>(vb, rb, rows, pp, oo, qs.hd); break;
        default: pv_queries<T, 1>(vb, rb, rows, pp, oo, qs.hd); break;
      }
    }
    q += n;
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
  static const AttnKernels k{qk, pv, softmax};
  return k;
}

}  // namespace ridge::model
