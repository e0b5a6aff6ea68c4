// AVX2 dot products of Q4_0, Q4_1, Q5_0, Q5_1 with Q8_0 activations: quants unpacked to
// unsigned bytes, vpmaddubsw with the signed activations, vpmaddwd into int32; the offsets of
// the signed formats and the mins go through the activations' block sums.
#include <immintrin.h>

#include <cstddef>
#include <cstring>
#include <utility>

#include "kernels/quant/blocks.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/x86_avx2/quant_simd.h"

namespace ridge::kernels::quant_avx2 {
namespace {


// Byte j of the result is 0x10 where bit j of the 32-bit qh is set, else 0.
inline __m256i qh_bytes(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), spread);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit), _mm256_set1_epi8(0x10));
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

// Lane k of v in every lane, given lo / hi: v's low / high 128 bits in both halves. One in-lane
// shuffle: the single-row dot keeps d dx in registers (through the stack it measured ~6%
// slower), the multi-row one broadcasts it from a stack copy (a load, not a shuffle port).
template <int k>
inline __m256 lane(__m256 lo, __m256 hi) {
  return _mm256_permute_ps(k < 4 ? lo : hi, (k % 4) * 0x55);
}

// A block's quants as 32 unsigned bytes, element e in byte e.
template <typename Block, bool kFive>
inline __m256i unpack(const Block& w) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs));
  __m256i qq = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0f));
  if constexpr (kFive) qq = _mm256_or_si256(qq, qh_bytes(w.qh));
  return qq;
}

// The block's exact integer dot of its unsigned quants qq with x, in 8 int32 lanes, as f32.
inline __m256 block_dot(__m256i qq, const int8_t* x) {
  const __m256i p16 = _mm256_maddubs_epi16(qq, load32(x));
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

// The activations of x rows i0 .. i0 + MR - 1 (Q8_0 quants, block scales, block sums and, for
// the formats with a min, ggml's Q8_1 block terms).
template <int MR>
struct XRows {
  const int8_t* q[MR];
  const float* d[MR];
  const int32_t* sum[MR];
  const float* s[MR];
};

// Legacy formats with unsigned quants q (0..15 or 0..31): x = d (q - kOffset) (Q4_0, Q5_0) or
// d q + m (Q4_1, Q5_1). One weight row against MR x rows: each block is unpacked once and its
// quants serve every x row. Per block and x row, the unsigned quants' integer dot (8 int32
// lanes) times d dx, into two accumulators (even and odd blocks: one would bound a block at the
// FMA's 4-cycle latency); the offset (-kOffset d dx xsum) or min (m xs, ggml's Q8_1 term) per 8
// blocks in one vector. Eight blocks' d (and m) are read into one vector at a time; each block's
// d dx is broadcast by a shuffle (one x row) or from a stack copy (several). Each x row's
// result is the same lanes summed in the same order whatever MR is: batch invariant.
template <typename Block, bool kFive, bool kMin, int MR>
void dot_legacy(const Block* w, const XRows<MR>& x, int64_t nb, float out[MR]) {
  const float offset = kFive ? -16.0f : -8.0f;
  __m256 acc[MR][2], acc_term[MR];
  for (int i = 0; i < MR; ++i) {
    acc[i][0] = acc[i][1] = acc_term[i] = _mm256_setzero_ps();
  }
  alignas(32) float dd[MR][8];
  [[maybe_unused]] __m256 lo, hi;  // MR = 1: d dx of blocks 0-3 / 4-7 in both halves
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) {
    const __m256 dw = halves8(w + b, offsetof(Block, d));
    [[maybe_unused]] __m256 mw;
    if constexpr (kMin) mw = halves8(w + b, offsetof(Block, m));
    for (int i = 0; i < MR; ++i) {
      const __m256 ddv = _mm256_mul_ps(dw, _mm256_loadu_ps(x.d[i] + b));
      if constexpr (MR == 1) {
        lo = _mm256_permute2f128_ps(ddv, ddv, 0x00);
        hi = _mm256_permute2f128_ps(ddv, ddv, 0x11);
      } else {
        _mm256_store_ps(dd[i], ddv);
      }
      if constexpr (kMin) {
        acc_term[i] = _mm256_fmadd_ps(mw, _mm256_loadu_ps(x.s[i] + b), acc_term[i]);
      } else {
        const __m256 xsf = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.sum[i] + b)));
        acc_term[i] = _mm256_fmadd_ps(_mm256_mul_ps(ddv, _mm256_set1_ps(offset)), xsf, acc_term[i]);
      }
    }
    const auto step = [&]<int k>() {
      const __m256i qq = unpack<Block, kFive>(w[b + k]);
      for (int i = 0; i < MR; ++i) {
        const __m256 p = block_dot(qq, x.q[i] + kQk * (b + k));
        if constexpr (MR == 1) {
          acc[i][k % 2] = _mm256_fmadd_ps(p, lane<k>(lo, hi), acc[i][k % 2]);
        } else {
          acc[i][k % 2] = _mm256_fmadd_ps(p, _mm256_broadcast_ss(&dd[i][k]), acc[i][k % 2]);
        }
      }
    };
    [&]<int... k>(std::integer_sequence<int, k...>) { (step.template operator()<k>(), ...); }(std::make_integer_sequence<int, 8>{});
  }
  float tail_term[MR] = {};
  for (; b < nb; ++b) {
    const __m256i qq = unpack<Block, kFive>(w[b]);
    for (int i = 0; i < MR; ++i) {
      const float d = half(w[b].d) * x.d[i][b];
      acc[i][b % 2] = _mm256_fmadd_ps(block_dot(qq, x.q[i] + kQk * b), _mm256_set1_ps(d), acc[i][b % 2]);
      if constexpr (kMin) {
        tail_term[i] += half(w[b].m) * x.s[i][b];
      } else {
        tail_term[i] += d * offset * static_cast<float>(x.sum[i][b]);
      }
    }
  }
  for (int i = 0; i < MR; ++i) {
    out[i] = hsum8(_mm256_add_ps(acc[i][0], acc[i][1])) + hsum8(acc_term[i]) + tail_term[i];
  }
}

// Weight rows [j0, j1) in groups of kRowGroup against x rows in groups of MR: a group's weight
// rows and MR x rows stay in L1 while every pair is computed, so each x row is read from L2
// once per kRowGroup weight rows, not once per weight row.
constexpr int64_t kRowGroup = 8;
constexpr int kMaxMr = 4;

template <typename Block, bool kFive, bool kMin, int MR>
void rows_group(const WeightView& w, const Acts& a, int64_t i0, int64_t j0, int64_t j1, float* y,
                int64_t ldy) {
  const int64_t nb = a.cols / kQk;
  XRows<MR> x;
  for (int i = 0; i < MR; ++i) {
    x.q[i] = a.q8_qs + (i0 + i) * a.cols;
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
  for (int64_t jg = j0; jg < j1; jg += kRowGroup) {
    const int64_t jg1 = j1 - jg < kRowGroup ? j1 : jg + kRowGroup;
    int64_t i = 0;
    for (; i + kMaxMr <= a.m; i += kMaxMr) rows_group<Block, kFive, kMin, kMaxMr>(w, a, i, jg, jg1, y, ldy);
    switch (a.m - i) {
      case 1: rows_group<Block, kFive, kMin, 1>(w, a, i, jg, jg1, y, ldy); break;
      case 2: rows_group<Block, kFive, kMin, 2>(w, a, i, jg, jg1, y, ldy); break;
      case 3: rows_group<Block, kFive, kMin, 3>(w, a, i, jg, jg1, y, ldy); break;
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
