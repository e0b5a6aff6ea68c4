// AVX2 dot products of Q4_K, Q5_K, Q6_K weight rows with Q8_K activations.
// Integer part per block: unpack the quants to bytes, vpmaddubsw (unsigned quant x signed
// activation -> int16 pairs; the largest |pair| is 2 * 63 * 127 = 16002, no saturation), then
// vpmaddwd with the sub-block scales -> int32. Float part: int32 lanes -> f32, times the block's
// scale product, accumulated in 8 lanes and summed once per output (quant_rows.h).
#include <immintrin.h>

#include <cstring>

#include "kernels/quant/blocks.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/x86_avx2/quant_simd.h"

namespace ridge::kernels::quant_avx2 {
namespace {


// 8 (scale, min) 6-bit pairs of Q4_K/Q5_K as bytes: sc in bytes 0..7, mins in 8..15.
inline __m128i unpack_k4_scales(const uint8_t* s) {
  // Vector form of the 12-byte packing (scale_packing.h): bytes 0..3 / 4..7 hold the low 6 bits
  // of sc0..3 / mn0..3 and the top 2 bits of sc4..7 / mn4..7; bytes 8..11 their low nibbles.
  // Reads 16 bytes: the 4 after the scales are the block's quants, so it stays inside the block.
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
  const __m128i a = _mm_shuffle_epi8(x, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
  const __m128i b = _mm_shuffle_epi8(x, _mm_setr_epi8(0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7));
  const __m128i low6_or_nib = _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0);
  const __m128i high_nib = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15);
  const __m128i top2 = _mm_setr_epi8(0, 0, 0, 0, 48, 48, 48, 48, 0, 0, 0, 0, 48, 48, 48, 48);
  const __m128i lo = _mm_or_si128(_mm_and_si128(a, low6_or_nib), _mm_and_si128(_mm_srli_epi16(a, 4), high_nib));
  return _mm_or_si128(lo, _mm_and_si128(_mm_srli_epi16(b, 2), top2));  // bits 6,7 -> 4,5
}

// Byte-shuffle controls that broadcast int16 element k of each 128-bit lane.
inline __m256i bcast16_ctrl(int k) { return _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * k)); }

// Moves bit `bit` of every byte to bit 4 (other bits: garbage, to be masked with 0x10). The
// 16-bit shifts carry bits across the byte boundary only into positions the mask drops.
inline __m256i bit_to_4(__m256i v, int bit) {
  return bit <= 4 ? _mm256_sll_epi16(v, _mm_cvtsi32_si128(4 - bit))
                  : _mm256_srl_epi16(v, _mm_cvtsi32_si128(bit - 4));
}

// Q4_K (kFive = false) and Q5_K: 8 sub-blocks of 32, x = d sc q - dmin mn.
template <bool kFive, typename Block>
float dot_q45_k(const Block* w, const int8_t* xq, const float* xd, const int16_t* bsums,
                int64_t nb) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  __m256 acc = _mm256_setzero_ps();
  __m128 accm = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const float dx = xd[b];
    const __m128i scm = unpack_k4_scales(w[b].scales);
    // mins: sum_s mn_s * (bsum[2s] + bsum[2s + 1])
    const __m256i bs = load32(bsums + 16 * b);
    const __m128i pairs = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
    const __m128i mins16 = _mm_cvtepu8_epi16(_mm_srli_si128(scm, 8));
    const __m128 msum = _mm_cvtepi32_ps(_mm_madd_epi16(mins16, pairs));
    accm = _mm_fmadd_ps(msum, _mm_set1_ps(dx * half(w[b].dmin)), accm);
    // scales as int16, both 128-bit lanes alike
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scm));
    __m256i qh;
    if constexpr (kFive) qh = load32(w[b].qh);
    __m256i sumi = _mm256_setzero_si256();
    const int8_t* x = xq + kQkK * b;
    for (int g = 0; g < 4; ++g) {
      const __m256i q = load32(w[b].qs + 32 * g);
      __m256i lo = _mm256_and_si256(q, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      if constexpr (kFive) {  // bit 2g of qh[l] -> bit 4 of the low quant, bit 2g+1 -> high
        lo = _mm256_or_si256(lo, _mm256_and_si256(bit_to_4(qh, 2 * g), bit4));
        hi = _mm256_or_si256(hi, _mm256_and_si256(bit_to_4(qh, 2 * g + 1), bit4));
      }
      const __m256i p_lo = _mm256_maddubs_epi16(lo, load32(x + 64 * g));
      const __m256i p_hi = _mm256_maddubs_epi16(hi, load32(x + 64 * g + 32));
      const __m256i s_lo = _mm256_shuffle_epi8(sc16, bcast16_ctrl(2 * g));
      const __m256i s_hi = _mm256_shuffle_epi8(sc16, bcast16_ctrl(2 * g + 1));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_lo, s_lo));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_hi, s_hi));
    }
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(dx * half(w[b].d)), acc);
  }
  __m128 m = _mm_add_ps(accm, _mm_movehl_ps(accm, accm));
  m = _mm_add_ss(m, _mm_movehdup_ps(m));
  return hsum8(acc) - _mm_cvtss_f32(m);
}

// Q6_K: 16 sub-blocks of 16, x = d sc (q - 32), q = 4 low bits from ql | 2 high bits from qh.
float dot_q6_k(const BlockQ6_K* w, const int8_t* xq, const float* xd, const int16_t* bsums,
               int64_t nb) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i hmask = _mm256_set1_epi8(0x30);
  // per 128-bit lane: broadcast int16 0 (low lane) / 1 (high lane) of each dword pair
  const __m256i pick = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                        2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i sc16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)));
    // the -32 offset: 32 * sum_i sc_i * bsum_i
    __m256i sumi = _mm256_slli_epi32(_mm256_madd_epi16(sc16, load32(bsums + 16 * b)), 5);
    sumi = _mm256_sub_epi32(_mm256_setzero_si256(), sumi);
    const int8_t* x = xq + kQkK * b;
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load32(w[b].ql + 64 * h);
      const __m256i ql1 = load32(w[b].ql + 64 * h + 32);
      const __m256i qh = load32(w[b].qh + 32 * h);
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), hmask)),
          _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), hmask)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), _mm256_and_si256(qh, hmask)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                          _mm256_and_si256(_mm256_srli_epi16(qh, 2), hmask)),
      };
      for (int k = 0; k < 4; ++k) {
        const __m256i p = _mm256_maddubs_epi16(q[k], load32(x + 128 * h + 32 * k));
        // scales of sub-blocks 8h + 2k (low lane) and 8h + 2k + 1 (high lane)
        const __m256i pair = _mm256_permutevar8x32_epi32(sc16, _mm256_set1_epi32(4 * h + k));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, _mm256_shuffle_epi8(pair, pick)));
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

}  // namespace

void rows_q4_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ4_K, kQkK>(w, a, j0, j1, y, ldy, [&](const BlockQ4_K* wr, int64_t i, int64_t nb) {
    return dot_q45_k<false>(wr, a.q8_qs + i * a.cols, a.q8k_d + i * nb, a.q8k_bsums + i * nb * 16, nb);
  });
}

void rows_q5_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ5_K, kQkK>(w, a, j0, j1, y, ldy, [&](const BlockQ5_K* wr, int64_t i, int64_t nb) {
    return dot_q45_k<true>(wr, a.q8_qs + i * a.cols, a.q8k_d + i * nb, a.q8k_bsums + i * nb * 16, nb);
  });
}

void rows_q6_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ6_K, kQkK>(w, a, j0, j1, y, ldy, [&](const BlockQ6_K* wr, int64_t i, int64_t nb) {
    return dot_q6_k(wr, a.q8_qs + i * a.cols, a.q8k_d + i * nb, a.q8k_bsums + i * nb * 16, nb);
  });
}

}  // namespace ridge::kernels::quant_avx2
