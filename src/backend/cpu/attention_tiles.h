// The tiling of the SIMD attention loops, written once over a vector-ops type V that each ISA
// file defines (x86_avx2/attention.cpp: 8 lanes, x86_avx512/attention.cpp: 16). V provides
//   using Reg; kLanes; kQkRows (K rows per score tile); kPvCols (registers of V per sum tile);
//   template <kv::KvType T> Reg load(const uint8_t* row, int64_t i)  (values [i, i + kLanes) as f32)
//   zero(), loadu(p), storeu(p, r), set1(x), fmadd(a, b, c), hsum(r) (a fixed reduction tree);
//   kSumBatch and sum_batch<R>(const Reg* r, float scale, float* out, int64_t ld): out[(k / R) *
//   ld + k % R] = hsum(r[k]) * scale for k < kSumBatch, the same bits as hsum (kSumBatch 0: no
//   batched form; R divides kSumBatch).
// Include only from a file compiled for that ISA: internal linkage, no cross-ISA copy is linked.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kv/kv_cache.h"
#include "backend/cpu/attention_kernels.h"

namespace ridge::backend::cpu {
namespace {

// Queries [q0, q0 + NQ) against rows [j0, j0 + R): every (query, row) pair has its own
// accumulator, so a score is the same whatever NQ and R are (they only interleave the chains).
template <typename V, kv::KvType T, int NQ, int R>
inline void qk_tile(const uint8_t* k, uint64_t rb, int64_t j0, const float* const* x, int64_t hd,
                    float scale, float* scores, int64_t ld) {
  typename V::Reg acc[NQ][R];
  for (int n = 0; n < NQ; ++n) {
    for (int r = 0; r < R; ++r) acc[n][r] = V::zero();
  }
  for (int64_t i = 0; i < hd; i += V::kLanes) {
    typename V::Reg kv[R];
    for (int r = 0; r < R; ++r) kv[r] = V::template load<T>(k + static_cast<uint64_t>(j0 + r) * rb, i);
    for (int n = 0; n < NQ; ++n) {
      const typename V::Reg xq = V::loadu(x[n] + i);
      for (int r = 0; r < R; ++r) acc[n][r] = V::fmadd(xq, kv[r], acc[n][r]);
    }
  }
  if constexpr (NQ * R == V::kSumBatch) {
    V::template sum_batch<R>(&acc[0][0], scale, scores + j0, ld);
  } else {
    for (int n = 0; n < NQ; ++n) {
      for (int r = 0; r < R; ++r) scores[n * ld + j0 + r] = V::hsum(acc[n][r]) * scale;
    }
  }
}

// K rows per score tile for NQ queries: enough to fill one batched reduction (kSumBatch sums)
// when NQ divides it (the reductions then cost a fraction of the per-score trees: with 2 queries
// per KV head, as Qwen3-0.6B/1.7B have, 8 rows instead of 4), else kQkRows.
template <typename V, int NQ>
constexpr int qk_tile_rows() {
  if constexpr (V::kSumBatch > 0 && V::kSumBatch % NQ == 0 && V::kSumBatch / NQ >= V::kQkRows) {
    return V::kSumBatch / NQ;
  } else {
    return V::kQkRows;
  }
}

template <typename V, kv::KvType T, int NQ>
void qk_rows(const uint8_t* k, uint64_t rb, int64_t n_rows, const AttnQueries& qs, int64_t q0,
             float scale, float* scores, int64_t ld) {
  const float* x[NQ];
  for (int n = 0; n < NQ; ++n) x[n] = qs.q_at(q0 + n);
  const int64_t hd = qs.hd;
  float* s = scores + q0 * ld;
  constexpr int kR = qk_tile_rows<V, NQ>();
  int64_t j = 0;
  for (; j + kR <= n_rows; j += kR) qk_tile<V, T, NQ, kR>(k, rb, j, x, hd, scale, s, ld);
  for (; j < n_rows; ++j) qk_tile<V, T, NQ, 1>(k, rb, j, x, hd, scale, s, ld);
}

template <typename V, kv::KvType T>
void qk_t(const void* k, int64_t n_rows, const AttnQueries& qs, float scale, float* scores,
          int64_t ld) {
  const auto* kb = static_cast<const uint8_t*>(k);
  const uint64_t rb = kv::kv_row_bytes(T, qs.hd);
  int64_t q = 0;
  for (; q + 4 <= qs.n_q; q += 4) qk_rows<V, T, 4>(kb, rb, n_rows, qs, q, scale, scores, ld);
  switch (qs.n_q - q) {
    case 3: return qk_rows<V, T, 3>(kb, rb, n_rows, qs, q, scale, scores, ld);
    case 2: return qk_rows<V, T, 2>(kb, rb, n_rows, qs, q, scale, scores, ld);
    case 1: return qk_rows<V, T, 1>(kb, rb, n_rows, qs, q, scale, scores, ld);
    default: return;
  }
}

// out[n][i0, i0 + kLanes NV) += p[n][j] * V_j[i0, ...) for rows j in [0, n_rows), ascending,
// with the sums held in registers over the rows (the same operations as one row at a time).
template <typename V, kv::KvType T, int NQ, int NV>
inline void pv_tile(const uint8_t* v, uint64_t rb, int64_t n_rows, const float* const* p,
                    float* const* out, int64_t i0) {
  constexpr int kL = V::kLanes;
  typename V::Reg acc[NQ][NV];
  for (int n = 0; n < NQ; ++n) {
    for (int c = 0; c < NV; ++c) acc[n][c] = V::loadu(out[n] + i0 + kL * c);
  }
  for (int64_t j = 0; j < n_rows; ++j) {
    const uint8_t* row = v + static_cast<uint64_t>(j) * rb;
    typename V::Reg vv[NV];
    for (int c = 0; c < NV; ++c) vv[c] = V::template load<T>(row, i0 + kL * c);
    for (int n = 0; n < NQ; ++n) {
      const typename V::Reg w = V::set1(p[n][j]);
      for (int c = 0; c < NV; ++c) acc[n][c] = V::fmadd(w, vv[c], acc[n][c]);
    }
  }
  for (int n = 0; n < NQ; ++n) {
    for (int c = 0; c < NV; ++c) V::storeu(out[n] + i0 + kL * c, acc[n][c]);
  }
}

template <typename V, kv::KvType T, int NQ>
void pv_queries(const uint8_t* v, uint64_t rb, int64_t n_rows, const float* const* p,
                float* const* out, int64_t hd) {
  constexpr int kWide = V::kLanes * V::kPvCols;
  int64_t i = 0;
  for (; i + kWide <= hd; i += kWide) pv_tile<V, T, NQ, V::kPvCols>(v, rb, n_rows, p, out, i);
  for (; i < hd; i += V::kLanes) pv_tile<V, T, NQ, 1>(v, rb, n_rows, p, out, i);
}

template <typename V, kv::KvType T>
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
        case 4: pv_queries<V, T, 4>(vb, rb, rows, pp, oo, qs.hd); break;
        case 3: pv_queries<V, T, 3>(vb, rb, rows, pp, oo, qs.hd); break;
        case 2: pv_queries<V, T, 2>(vb, rb, rows, pp, oo, qs.hd); break;
        default: pv_queries<V, T, 1>(vb, rb, rows, pp, oo, qs.hd); break;
      }
    }
    q += n;
  }
}

template <typename V>
void qk_simd(kv::KvType type, const void* k, int64_t n_rows, const AttnQueries& qs, float scale,
             float* scores, int64_t ld) {
  switch (type) {
    case kv::KvType::kF32: return qk_t<V, kv::KvType::kF32>(k, n_rows, qs, scale, scores, ld);
    case kv::KvType::kF16: return qk_t<V, kv::KvType::kF16>(k, n_rows, qs, scale, scores, ld);
    case kv::KvType::kBF16: return qk_t<V, kv::KvType::kBF16>(k, n_rows, qs, scale, scores, ld);
    default: return qk_t<V, kv::KvType::kQ8_0>(k, n_rows, qs, scale, scores, ld);
  }
}

template <typename V>
void pv_simd(kv::KvType type, const void* v, int64_t n_rows, const float* p, int64_t ld,
             int64_t skip, const AttnQueries& qs) {
  switch (type) {
    case kv::KvType::kF32: return pv_t<V, kv::KvType::kF32>(v, n_rows, p, ld, skip, qs);
    case kv::KvType::kF16: return pv_t<V, kv::KvType::kF16>(v, n_rows, p, ld, skip, qs);
    case kv::KvType::kBF16: return pv_t<V, kv::KvType::kBF16>(v, n_rows, p, ld, skip, qs);
    default: return pv_t<V, kv::KvType::kQ8_0>(v, n_rows, p, ld, skip, qs);
  }
}

}  // namespace
}  // namespace ridge::backend::cpu
