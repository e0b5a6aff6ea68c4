// AVX2 dot products of Q4_0, Q4_1, Q5_0, Q5_1 with Q8_0 activations: quants unpacked to
// unsigned bytes, vpmaddubsw with the signed activations, vpmaddwd into int32; the offsets of
// the signed formats and the mins go through the activations' block sums.
#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "base/thread_scratch.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/x86_avx2/quant_simd.h"

namespace ridge::kernels::quant_avx2 {
namespace {


inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Byte j of the result is 0x10 where bit j % 8 of byte sel[j] of hv's 64-bit lane is set, else
// 0 (sel: vpshufb indices, one qh byte per 8 result bytes).
inline __m256i bit4_bytes(__m256i hv, __m256i sel) {
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i set = _mm256_and_si256(_mm256_shuffle_epi8(hv, sel), bit);
  return _mm256_and_si256(_mm256_cmpeq_epi8(set, bit), _mm256_set1_epi8(0x10));
}

// Byte j of the result is 0x10 where bit j of the 32-bit qh is set, else 0.
inline __m256i qh_bytes(const uint8_t* qh) {
  return bit4_bytes(_mm256_set1_epi64x(load_u32(qh)), _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                                                       2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
}

// The fp16 field at byte `at` of blocks w[0..7] as f32 lanes 0..7, by vpinsrw from memory.
// Not kernels/gather_halves.h's scalar assembly: in this loop GCC turns that into a longer
// shuffle sequence (BM_GemvHot avx2 Q4_0 12.0 against 15.5 GB/cpu_s, 7 alternating runs).
template <typename Block>
inline __m256 halves8(const Block* w, size_t at) {
  const auto* p = reinterpret_cast<const uint8_t*>(w) + at;
  const auto h = [&](int k) {
    uint16_t v;
    std::memcpy(&v, p + k * sizeof(Block), 2);
    return static_cast<int>(v);
  };
  __m128i v = _mm_cvtsi32_si128(h(0));
  v = _mm_insert_epi16(v, h(1), 1);
  v = _mm_insert_epi16(v, h(2), 2);
  v = _mm_insert_epi16(v, h(3), 3);
  v = _mm_insert_epi16(v, h(4), 4);
  v = _mm_insert_epi16(v, h(5), 5);
  v = _mm_insert_epi16(v, h(6), 6);
  v = _mm_insert_epi16(v, h(7), 7);
  return _mm256_cvtph_ps(v);
}

// A block's quants as 32 unsigned bytes, element e in byte e (a lone last block).
template <typename Block, bool kFive>
inline __m256i unpack(const Block& w) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs));
  __m256i qq = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0f));
  if constexpr (kFive) qq = _mm256_or_si256(qq, qh_bytes(w.qh));
  return qq;
}

// Blocks w[0] and w[1] unpacked side by side: lo = elements 0..15 of w[0] | 0..15 of w[1], hi =
// elements 16..31 of each. Their qs are each one 16-byte load, so a nibble split serves two
// blocks; the x bytes come in the same order (arrange_pairs).
template <typename Block, bool kFive>
inline void unpack_pair(const Block* w, __m256i* lo, __m256i* hi) {
  const __m256i v = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(w[1].qs),
                                        reinterpret_cast<const __m128i*>(w[0].qs));
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  *lo = _mm256_and_si256(v, low4);
  *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
  if constexpr (kFive) {  // bit 4 of element e is bit e of the block's qh
    // Both qh words in every 64-bit lane; byte j of lo takes qh byte j / 8 of its block (bytes
    // 0-1 of w[0]'s word in the low half, 4-5 of w[1]'s in the high half), hi bytes 2-3 / 6-7.
    const uint64_t h = load_u32(w[0].qh) | static_cast<uint64_t>(load_u32(w[1].qh)) << 32;
    const __m256i hv = _mm256_set1_epi64x(static_cast<int64_t>(h));
    *lo = _mm256_or_si256(*lo, bit4_bytes(hv, _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                                      4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5)));
    *hi = _mm256_or_si256(*hi, bit4_bytes(hv, _mm256_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,  //
                                                      6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7)));
  }
}

// Two blocks' exact integer dots with their x, in 4 int32 lanes each (lanes 0-3: the first
// block), as f32. The int16 sum of the two vpmaddubsw results cannot overflow: |q| <= 31,
// |x| <= 127, 4 products per int16 lane, at most 15748.
inline __m256 pair_dot(__m256i lo, __m256i hi, const int8_t* xp) {
  const __m256i s = _mm256_add_epi16(_mm256_maddubs_epi16(lo, load32(xp)), _mm256_maddubs_epi16(hi, load32(xp + 32)));
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(s, _mm256_set1_epi16(1)));
}

// The block's exact integer dot of its unsigned quants qq with x, in 8 int32 lanes, as f32.
inline __m256 block_dot(__m256i qq, const int8_t* x) {
  const __m256i p16 = _mm256_maddubs_epi16(qq, load32(x));
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

// The activations of x rows i0 .. i0 + MR - 1: Q8_0 quants in pair order (arrange_pairs),
// block scales, block sums and, for the formats with a min, ggml's Q8_1 block terms.
template <int MR>
struct XRows {
  const int8_t* pairs[MR];
  const float* d[MR];
  const int32_t* sum[MR];
  const float* s[MR];
};

// x's blocks 2p and 2p + 1 as 64 bytes: elements 0..15 of each, then 16..31 of each (the order
// unpack_pair gives the weights); a lone last block as stored.
void arrange_pairs(const int8_t* x, int64_t nb, int8_t* out) {
  int64_t p = 0;
  for (; p + 1 < nb; p += 2) {
    const __m256i a = load32(x + kQk * p), b = load32(x + kQk * (p + 1));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + kQk * p), _mm256_permute2x128_si256(a, b, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + kQk * p + 32), _mm256_permute2x128_si256(a, b, 0x31));
  }
  if (p < nb) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + kQk * p), load32(x + kQk * p));
}

// One pair of blocks against MR x rows (their x bytes at x.pairs[i] + at): acc[i] += the pair's
// integer dots times d dx, spread over the pair's lanes from dd[i] (8 blocks' d dx) by idx.
template <typename Block, bool kFive, int MR>
inline void pair_step(const Block* w, const XRows<MR>& x, int64_t at, const __m256 dd[MR],
                      __m256i idx, __m256 acc[MR]) {
  __m256i lo, hi;
  unpack_pair<Block, kFive>(w, &lo, &hi);
  for (int i = 0; i < MR; ++i) {
    acc[i] = _mm256_fmadd_ps(pair_dot(lo, hi, x.pairs[i] + at), _mm256_permutevar8x32_ps(dd[i], idx), acc[i]);
  }
}

// Legacy formats with unsigned quants q (0..15 or 0..31): x = d (q - kOffset) (Q4_0, Q5_0) or
// d q + m (Q4_1, Q5_1). One weight row against MR x rows: blocks are unpacked two at a time,
// once for every x row. Per pair of blocks and x row, the unsigned quants' integer dots (4 int32
// lanes per block) times each block's d dx, into two accumulators (alternate pairs: one would
// bound a pair at the FMA's 4-cycle latency); the offset (-kOffset d dx xsum) or min (m xs,
// ggml's Q8_1 term) per 8 blocks in one vector. Eight blocks' d (and m) are read into one vector
// at a time, and a pair's d dx spread over its lanes by one vpermps. Each x row's result is
// the same lanes summed in the same order whatever MR is: batch invariant.
template <typename Block, bool kFive, bool kMin, int MR>
void dot_legacy(const Block* w, const XRows<MR>& x, int64_t nb, float out[MR]) {
  const float offset = kFive ? -16.0f : -8.0f;
  __m256 acc0[MR], acc1[MR], acc_term[MR];
  for (int i = 0; i < MR; ++i) {
    acc0[i] = acc1[i] = acc_term[i] = _mm256_setzero_ps();
  }
  const __m256i spread[4] = {_mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1), _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3),
                             _mm256_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5), _mm256_setr_epi32(6, 6, 6, 6, 7, 7, 7, 7)};
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) {
    const __m256 dw = halves8(w + b, offsetof(Block, d));
    [[maybe_unused]] __m256 mw;
    if constexpr (kMin) mw = halves8(w + b, offsetof(Block, m));
    __m256 dd[MR];
    for (int i = 0; i < MR; ++i) {
      dd[i] = _mm256_mul_ps(dw, _mm256_loadu_ps(x.d[i] + b));
      if constexpr (kMin) {
        acc_term[i] = _mm256_fmadd_ps(mw, _mm256_loadu_ps(x.s[i] + b), acc_term[i]);
      } else {
        const __m256 xsf = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.sum[i] + b)));
        acc_term[i] = _mm256_fmadd_ps(_mm256_mul_ps(dd[i], _mm256_set1_ps(offset)), xsf, acc_term[i]);
      }
    }
    for (int p = 0; p < 4; p += 2) {  // pairs p and p + 1 into acc0 and acc1
      pair_step<Block, kFive, MR>(w + b + 2 * p, x, kQk * (b + 2 * p), dd, spread[p], acc0);
      pair_step<Block, kFive, MR>(w + b + 2 * p + 2, x, kQk * (b + 2 * p + 2), dd, spread[p + 1], acc1);
    }
  }
  float tail_term[MR] = {};
  for (; b < nb; b += 2) {
    const bool pair = b + 1 < nb;
    __m256i lo, hi;
    if (pair) unpack_pair<Block, kFive>(w + b, &lo, &hi);
    for (int i = 0; i < MR; ++i) {
      const float d0 = half(w[b].d) * x.d[i][b];
      if (pair) {
        const float d1 = half(w[b + 1].d) * x.d[i][b + 1];
        const __m256 dot = pair_dot(lo, hi, x.pairs[i] + kQk * b);
        acc0[i] = _mm256_fmadd_ps(dot, _mm256_setr_m128(_mm_set1_ps(d0), _mm_set1_ps(d1)), acc0[i]);
      } else {
        const __m256 dot = block_dot(unpack<Block, kFive>(w[b]), x.pairs[i] + kQk * b);
        acc1[i] = _mm256_fmadd_ps(dot, _mm256_set1_ps(d0), acc1[i]);
      }
      for (int64_t k = b; k < b + (pair ? 2 : 1); ++k) {
        if constexpr (kMin) {
          tail_term[i] += half(w[k].m) * x.s[i][k];
        } else {
          tail_term[i] += half(w[k].d) * x.d[i][k] * offset * static_cast<float>(x.sum[i][k]);
        }
      }
    }
  }
  for (int i = 0; i < MR; ++i) {
    out[i] = hsum8(_mm256_add_ps(_mm256_add_ps(acc0[i], acc1[i]), acc_term[i])) + tail_term[i];
  }
}

// Weight rows [j0, j1) in groups of kRowGroup against x rows in groups of MR: a group's weight
// rows and MR x rows stay in L1 while every pair is computed, so each x row is read from L2
// once per kRowGroup weight rows, not once per weight row.
constexpr int64_t kRowGroup = 8;
constexpr int kMaxMr = 4;

template <typename Block, bool kFive, bool kMin, int MR>
void rows_group(const WeightView& w, const Acts& a, const int8_t* pairs, int64_t i0, int64_t j0,
                int64_t j1, float* y, int64_t ldy) {
  const int64_t nb = a.cols / kQk;
  XRows<MR> x;
  for (int i = 0; i < MR; ++i) {
    x.pairs[i] = pairs + (i0 + i) * a.cols;
    x.d[i] = a.q8_d + (i0 + i) * nb;
    x.sum[i] = a.q8_sum + (i0 + i) * nb;
    x.s[i] = kMin ? a.q8_s + (i0 + i) * nb : nullptr;
  }
  for (int64_t j = j0; j < j1; ++j) {
    const auto* wr = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w.data) + j * w.row_bytes);
    float out[MR];
    dot_legacy<Block, kFive, kMin, MR>(wr, x, nb, out);
    for (int i = 0; i < MR; ++i) y[(i0 + i) * ldy + j] = out[i];
  }
}

template <typename Block, bool kFive, bool kMin>
void rows_legacy(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  const int64_t nb = a.cols / kQk;
  const ThreadScratch scratch(kScratchKernelRows, static_cast<size_t>(a.m * a.cols));
  auto* const pairs = static_cast<int8_t*>(scratch.data());
  for (int64_t i = 0; i < a.m; ++i) arrange_pairs(a.q8_qs + i * a.cols, nb, pairs + i * a.cols);
  for (int64_t jg = j0; jg < j1; jg += kRowGroup) {
    const int64_t jg1 = j1 - jg < kRowGroup ? j1 : jg + kRowGroup;
    int64_t i = 0;
    for (; i + kMaxMr <= a.m; i += kMaxMr) rows_group<Block, kFive, kMin, kMaxMr>(w, a, pairs, i, jg, jg1, y, ldy);
    switch (a.m - i) {
      case 1: rows_group<Block, kFive, kMin, 1>(w, a, pairs, i, jg, jg1, y, ldy); break;
      case 2: rows_group<Block, kFive, kMin, 2>(w, a, pairs, i, jg, jg1, y, ldy); break;
      case 3: rows_group<Block, kFive, kMin, 3>(w, a, pairs, i, jg, jg1, y, ldy); break;
      default: break;
    }
  }
}

}  // namespace

void rows_q4_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_legacy<BlockQ4_0, false, false>(w, a, j0, j1, y, ldy);
}
void rows_q4_1(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_legacy<BlockQ4_1, false, true>(w, a, j0, j1, y, ldy);
}
void rows_q5_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_legacy<BlockQ5_0, true, false>(w, a, j0, j1, y, ldy);
}
void rows_q5_1(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_legacy<BlockQ5_1, true, true>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::quant_avx2
