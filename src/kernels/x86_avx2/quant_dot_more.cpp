// AVX2 dot products of Q4_0, Q4_1, Q5_0, Q5_1 (Q8_0 activations) and Q2_K, Q3_K (Q8_K activations).
// Same scheme as quant_dot.cpp: quants unpacked to unsigned bytes, vpmaddubsw with the signed
// activations, vpmaddwd with the (sub-block) scales; offsets of the signed formats and the mins
// go through the activations' block sums.
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
// shuffle (a stack copy and vbroadcastss made GCC keep eight pointers on the stack).
template <int k>
inline __m256 lane(__m256 lo, __m256 hi) {
  return _mm256_permute_ps(k < 4 ? lo : hi, (k % 4) * 0x55);
}

// A block's exact integer dot of its unsigned quants with x, in 8 int32 lanes, as f32.
template <typename Block, bool kFive>
inline __m256 block_dot(const Block& w, const int8_t* x) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs));
  __m256i qq = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0f));
  if constexpr (kFive) qq = _mm256_or_si256(qq, qh_bytes(w.qh));
  const __m256i p16 = _mm256_maddubs_epi16(qq, load32(x));
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

// Legacy formats with unsigned quants q (0..15 or 0..31): x = d (q - kOffset) (Q4_0, Q5_0) or
// d q + m (Q4_1, Q5_1). Per block, the unsigned quants' integer dot times d dx, into two
// accumulators (even and odd blocks: one would bound a block at the FMA's 4-cycle latency);
// the offset (-kOffset d dx xsum) or min (m xs, ggml's Q8_1 term) per 8 blocks in one vector.
// Eight blocks' d (and m) are read into one vector at a time and each block's d dx broadcast
// by one shuffle, instead of a scalar conversion, multiply and broadcast per block.
template <typename Block, bool kFive, bool kMin>
float dot_legacy(const Block* w, const int8_t* xq, const float* xd, const int32_t* xsum,
                 const float* xs, int64_t nb) {
  const float offset = kFive ? -16.0f : -8.0f;
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  __m256 acc_term = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) {
    const __m256 ddv = _mm256_mul_ps(halves8(w + b, offsetof(Block, d)), _mm256_loadu_ps(xd + b));
    const __m256 lo = _mm256_permute2f128_ps(ddv, ddv, 0x00), hi = _mm256_permute2f128_ps(ddv, ddv, 0x11);
    if constexpr (kMin) {
      acc_term = _mm256_fmadd_ps(halves8(w + b, offsetof(Block, m)), _mm256_loadu_ps(xs + b), acc_term);
    } else {
      const __m256 xsf = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xsum + b)));
      acc_term = _mm256_fmadd_ps(_mm256_mul_ps(ddv, _mm256_set1_ps(offset)), xsf, acc_term);
    }
    const auto step = [&]<int k>() {
      const __m256 p = block_dot<Block, kFive>(w[b + k], xq + kQk * (b + k));
      acc[k % 2] = _mm256_fmadd_ps(p, lane<k>(lo, hi), acc[k % 2]);
    };
    [&]<int... k>(std::integer_sequence<int, k...>) { (step.template operator()<k>(), ...); }(std::make_integer_sequence<int, 8>{});
  }
  float tail_term = 0.0f;
  for (; b < nb; ++b) {
    const float d = half(w[b].d) * xd[b];
    acc[b % 2] = _mm256_fmadd_ps(block_dot<Block, kFive>(w[b], xq + kQk * b), _mm256_set1_ps(d), acc[b % 2]);
    if constexpr (kMin) {
      tail_term += half(w[b].m) * xs[b];
    } else {
      tail_term += d * offset * static_cast<float>(xsum[b]);
    }
  }
  return hsum8(_mm256_add_ps(acc[0], acc[1])) + hsum8(acc_term) + tail_term;
}

// For 16-element sub-blocks: int16 scales [s0..s7 | s8..s15] -> per 128-bit lane the scales of
// sub-blocks 2k (low lane) and 2k + 1 (high lane), k = 0..7, broadcast over the lane.
inline __m256i pair_scales(__m256i sc16, int k) {
  const __m256i pick = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                        2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  return _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(sc16, _mm256_set1_epi32(k)), pick);
}

// Q2_K: x = d (sc & 15) q - dmin (sc >> 4), q in 0..3 at bits 2j of qs[32 h + l].
float dot_q2_k(const BlockQ2_K* w, const int8_t* xq, const float* xd, const int16_t* bsums,
               int64_t nb) {
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m128i m4 = _mm_set1_epi8(0x0f);
  __m256 acc = _mm256_setzero_ps();
  __m256 accm = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales));
    const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(sc8, m4));
    const __m256i mn16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), m4));
    const __m256 msum = _mm256_cvtepi32_ps(_mm256_madd_epi16(mn16, load32(bsums + 16 * b)));
    accm = _mm256_fmadd_ps(msum, _mm256_set1_ps(xd[b] * half(w[b].dmin)), accm);
    __m256i sumi = _mm256_setzero_si256();
    const int8_t* x = xq + kQkK * b;
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = load32(w[b].qs + 32 * h);
      for (int j = 0; j < 4; ++j) {
        const __m256i q = _mm256_and_si256(_mm256_srl_epi16(qs, _mm_cvtsi32_si128(2 * j)), m3);
        const __m256i p = _mm256_maddubs_epi16(q, load32(x + 128 * h + 32 * j));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, pair_scales(sc16, 4 * h + j)));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(xd[b] * half(w[b].d)), acc);
  }
  return hsum8(acc) - hsum8(accm);
}

// The 16 biased 6-bit scales of a Q3_K block as bytes (value + 32): low nibbles from scale bytes
// 0..7 (sub-blocks 8..15 in their high nibbles), two high bits from bytes 8..11 (dword lanes of
// 4 scales each take them at shifts 0, 2, 4, 6). The 16-byte load starts 2 bytes early (the
// last quants) so it stays inside the 110-byte block.
inline __m128i q3_k_scales(const BlockQ3_K& blk) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(
      reinterpret_cast<const uint8_t*>(&blk) + offsetof(BlockQ3_K, scales) - 2));
  const __m128i a = _mm_shuffle_epi8(x, _mm_setr_epi8(2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5, 6, 7, 8, 9));
  const __m128i b = _mm_shuffle_epi8(x, _mm_setr_epi8(10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13));
  const __m128i m_lo = _mm_setr_epi8(15, 15, 15, 15, 15, 15, 15, 15, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m128i m_hi = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15, 15, 15, 15, 15);
  const __m128i lo = _mm_or_si128(_mm_and_si128(a, m_lo), _mm_and_si128(_mm_srli_epi16(a, 4), m_hi));
  const __m128i top = _mm_and_si128(b, _mm_setr_epi32(0x03030303, 0x0c0c0c0c, 0x30303030, static_cast<int>(0xc0c0c0c0u)));
  const __m128i hi = _mm_srlv_epi32(_mm_sllv_epi32(top, _mm_setr_epi32(4, 2, 0, 0)), _mm_setr_epi32(0, 0, 0, 2));
  return _mm_or_si128(lo, hi);
}

// Q3_K: x = d (sc - 32) (q2 + 4 hbit - 4); u = q2 | hbit << 2 in 0..7, the -4 via the bsums.
float dot_q3_k(const BlockQ3_K* w, const int8_t* xq, const float* xd, const int16_t* bsums,
               int64_t nb) {
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m256i four = _mm256_set1_epi8(4);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    // 16 6-bit scales: low nibbles from bytes 0..7 (lo/hi nibble), high 2 bits from bytes 8..11
    const __m128i sc8 = q3_k_scales(w[b]);
    const __m256i sc16 = _mm256_sub_epi16(_mm256_cvtepu8_epi16(sc8), _mm256_set1_epi16(32));
    const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(sc16, load32(bsums + 16 * b)), 2);
    __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), off);
    const __m256i hm = load32(w[b].hmask);
    const int8_t* x = xq + kQkK * b;
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = load32(w[b].qs + 32 * h);
      for (int j = 0; j < 4; ++j) {
        // hmask bit n = 4h + j moved to bit 2 (value 4); the 16-bit shifts only carry bits across
        // the byte boundary into positions the mask drops
        const int n = 4 * h + j;
        const __m256i moved = n >= 2 ? _mm256_srl_epi16(hm, _mm_cvtsi32_si128(n - 2))
                                     : _mm256_sll_epi16(hm, _mm_cvtsi32_si128(2 - n));
        const __m256i hb = _mm256_and_si256(moved, four);
        const __m256i q = _mm256_or_si256(
            _mm256_and_si256(_mm256_srl_epi16(qs, _mm_cvtsi32_si128(2 * j)), m3), hb);
        const __m256i p = _mm256_maddubs_epi16(q, load32(x + 128 * h + 32 * j));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, pair_scales(sc16, 4 * h + j)));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(xd[b] * half(w[b].d)), acc);
  }
  return hsum8(acc);
}

template <typename Block, int kBlock, typename Dot>
void rows(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy,
          Dot dot) {
  const int64_t nb = a.cols / kBlock;
  for (int64_t j = j0; j < j1; ++j) {
    const auto* wr = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w.data) + j * w.row_bytes);
    for (int64_t i = 0; i < a.m; ++i) y[i * ldy + j] = dot(wr, i, nb);
  }
}

template <typename Block, bool kFive, bool kMin>
void rows_legacy(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<Block, kQk>(w, a, j0, j1, y, ldy, [&](const Block* wr, int64_t i, int64_t nb) {
    return dot_legacy<Block, kFive, kMin>(wr, a.q8_qs + i * a.cols, a.q8_d + i * nb, a.q8_sum + i * nb,
                                          kMin ? a.q8_s + i * nb : nullptr, nb);
  });
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

void rows_q2_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ2_K, kQkK>(w, a, j0, j1, y, ldy, [&](const BlockQ2_K* wr, int64_t i, int64_t nb) {
    return dot_q2_k(wr, a.q8_qs + i * a.cols, a.q8k_d + i * nb, a.q8k_bsums + i * nb * 16, nb);
  });
}

void rows_q3_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ3_K, kQkK>(w, a, j0, j1, y, ldy, [&](const BlockQ3_K* wr, int64_t i, int64_t nb) {
    return dot_q3_k(wr, a.q8_qs + i * a.cols, a.q8k_d + i * nb, a.q8k_bsums + i * nb * 16, nb);
  });
}

}  // namespace ridge::kernels::quant_avx2
