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

// Queries [q0, q0 + NQ) against rows [j0, j0 + R): every (query, row) pair has its own
// accumulator, so a score is the same whatever NQ and R are (they only interleave the chains).
template <GgmlType T, int NQ, int R>
inline void qk_tile(const uint8_t* k, uint64_t rb, int64_t j0, const float* const* x, int64_t hd,
                    float scale, float* scores, int64_t ld) {
  __m512 acc[NQ][R];
  for (int n = 0; n < NQ; ++n) {
    for (int r = 0; r < R; ++r) acc[n][r] = _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < hd; i += 16) {
    __m512 kv[R];
    for (int r = 0; r < R; ++r) kv[r] = load16<T>(k + static_cast<uint64_t>(j0 + r) * rb, i);
    for (int n = 0; n < NQ; ++n) {
      const __m512 xq = _mm512_loadu_ps(x[n] + i);
      for (int r = 0; r < R; ++r) acc[n][r] = _mm512_fmadd_ps(xq, kv[r], acc[n][r]);
    }
  }
  for (int n = 0; n < NQ; ++n) {
    for (int r = 0; r < R; ++r) scores[n * ld + j0 + r] = _mm512_reduce_add_ps(acc[n][r]) * scale;
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
  for (; j + 4 <= n_rows; j += 4) qk_tile<T, NQ, 4>(k, rb, j, x, hd, scale, s, ld);
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

// out[n][i0, i0 + 16 NV) += p[n][j] * V_j[i0, ...) for rows j in [0, n_rows), ascending, with
// the sums held in registers over the rows (the same operations as one row at a time).
template <GgmlType T, int NQ, int NV>
inline void pv_tile(const uint8_t* v, uint64_t rb, int64_t n_rows, const float* const* p,
                    float* const* out, int64_t i0) {
  __m512 acc[NQ][NV];
  for (int n = 0; n < NQ; ++n) {
    for (int c = 0; c < NV; ++c) acc[n][c] = _mm512_loadu_ps(out[n] + i0 + 16 * c);
  }
  for (int64_t j = 0; j < n_rows; ++j) {
    const uint8_t* row = v + static_cast<uint64_t>(j) * rb;
    __m512 vv[NV];
    for (int c = 0; c < NV; ++c) vv[c] = load16<T>(row, i0 + 16 * c);
    for (int n = 0; n < NQ; ++n) {
      const __m512 w = _mm512_set1_ps(p[n][j]);
      for (int c = 0; c < NV; ++c) acc[n][c] = _mm512_fmadd_ps(w, vv[c], acc[n][c]);
    }
  }
  for (int n = 0; n < NQ; ++n) {
    for (int c = 0; c < NV; ++c) _mm512_storeu_ps(out[n] + i0 + 16 * c, acc[n][c]);
  }
}

template <GgmlType T, int NQ>
void pv_queries(const uint8_t* v, uint64_t rb, int64_t n_rows, const float* const* p,
                float* const* out, int64_t hd) {
  int64_t i = 0;
  for (; i + 64 <= hd; i += 64) pv_tile<T, NQ, 4>(v, rb, n_rows, p, out, i);
  for (; i < hd; i += 16) pv_tile<T, NQ, 1>(v, rb, n_rows, p, out, i);
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

// e^x for x <= 0 (scores minus their max): 2^n * e^r with n = round(x / ln 2), |r| <= ln 2 / 2,
// e^r by its degree-7 Taylor polynomial (relative error < 1e-8 before rounding).
inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));  // below: 0 after scaling
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  for (float c : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f}) {
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  }
  return _mm512_scalef_ps(p, n);
}

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

const AttnKernels& attn_kernels_avx512() {
  static const AttnKernels k{qk, pv, softmax16};
  return k;
}

}  // namespace ridge::model
