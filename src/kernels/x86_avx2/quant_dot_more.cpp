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

}  // namespace ridge::kernels::quant_avx2
