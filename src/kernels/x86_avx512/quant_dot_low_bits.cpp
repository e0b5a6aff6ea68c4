// AVX-512 (BW + VNNI) dot products of Q2_K and Q3_K with Q8_K activations: the scheme of
// x86_avx2/quant_dot_more.cpp on 64 quants per instruction (two 32-quant runs joined), with the
// 16-element sub-block scales selected per 128-bit lane by vpermw and applied by vpdpwssd.
#include <immintrin.h>

// GCC 12's avx512fintrin.h feeds an uninitialized pass-through operand to the unmasked forms of
// many intrinsics (GCC bug 105593); -Wmaybe-uninitialized then fires inside our functions.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cstddef>

#include "kernels/quant/blocks.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/x86_avx512/quant_simd.h"

namespace ridge::kernels::quant_avx512 {
namespace {


// vpermw indices: 128-bit lane L of 64-quant chunk c takes the scale of sub-block 4c + L.
struct ChunkScales {
  __m512i sel[4];
  ChunkScales() {
    for (int c = 0; c < 4; ++c) {
      sel[c] = _mm512_inserti32x4(
          _mm512_inserti32x4(
              _mm512_inserti32x4(_mm512_zextsi128_si512(_mm_set1_epi16(static_cast<short>(4 * c))),
                                 _mm_set1_epi16(static_cast<short>(4 * c + 1)), 1),
              _mm_set1_epi16(static_cast<short>(4 * c + 2)), 2),
          _mm_set1_epi16(static_cast<short>(4 * c + 3)), 3);
    }
  }
};

// Shifts every 16-bit lane right by s (s < 0: left by -s).
inline __m256i shift16(__m256i v, int s) {
  return s >= 0 ? _mm256_srl_epi16(v, _mm_cvtsi32_si128(s)) : _mm256_sll_epi16(v, _mm_cvtsi32_si128(-s));
}

float dot_q2_k(const BlockQ2_K* w, const int8_t* xq, const float* xd, const int16_t* bsums,
               int64_t nb) {
  const ChunkScales cs;
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m128i m4 = _mm_set1_epi8(0x0f);
  __m512 acc = _mm512_setzero_ps();
  __m256 accm = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales));
    const __m512i sc16 = _mm512_zextsi256_si512(_mm256_cvtepu8_epi16(_mm_and_si128(sc8, m4)));
    const __m256i mn16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), m4));
    const __m256 msum = _mm256_cvtepi32_ps(_mm256_madd_epi16(mn16, load32(bsums + 16 * b)));
    accm = _mm256_fmadd_ps(msum, _mm256_set1_ps(xd[b] * half(w[b].dmin)), accm);
    __m512i sumi = _mm512_setzero_si512();
    __m512i sumi2 = _mm512_setzero_si512();
    const int8_t* x = xq + kQkK * b;
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = load32(w[b].qs + 32 * h);
      // runs j = 0, 1 then 2, 3: bits 2j of the 32 bytes, 64 quants in element order
      const __m512i q01 = join(_mm256_and_si256(qs, m3), _mm256_and_si256(_mm256_srli_epi16(qs, 2), m3));
      const __m512i q23 = join(_mm256_and_si256(_mm256_srli_epi16(qs, 4), m3),
                               _mm256_and_si256(_mm256_srli_epi16(qs, 6), m3));
      const __m512i p01 = _mm512_maddubs_epi16(q01, _mm512_loadu_si512(x + 128 * h));
      const __m512i p23 = _mm512_maddubs_epi16(q23, _mm512_loadu_si512(x + 128 * h + 64));
      sumi = _mm512_dpwssd_epi32(sumi, p01, _mm512_permutexvar_epi16(cs.sel[2 * h], sc16));
      sumi2 = _mm512_dpwssd_epi32(sumi2, p23, _mm512_permutexvar_epi16(cs.sel[2 * h + 1], sc16));
    }
    sumi = _mm512_add_epi32(sumi, sumi2);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(xd[b] * half(w[b].d)), acc);
  }
  return hsum16(acc) - hsum8(accm);
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

float dot_q3_k(const BlockQ3_K* w, const int8_t* xq, const float* xd, const int16_t* bsums,
               int64_t nb) {
  const ChunkScales cs;
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m256i four = _mm256_set1_epi8(4);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m128i sc8 = q3_k_scales(w[b]);
    const __m256i sc16 = _mm256_sub_epi16(_mm256_cvtepu8_epi16(sc8), _mm256_set1_epi16(32));
    const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(sc16, load32(bsums + 16 * b)), 2);
    __m512i sumi = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), off));
    __m512i sumi2 = _mm512_setzero_si512();
    const __m512i sc = _mm512_zextsi256_si512(sc16);
    const __m256i hm = load32(w[b].hmask);
    const int8_t* x = xq + kQkK * b;
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = load32(w[b].qs + 32 * h);
      __m256i q[4];
      for (int j = 0; j < 4; ++j) {  // q2 | hmask bit (4h + j) moved to bit 2
        const __m256i hb = _mm256_and_si256(shift16(hm, 4 * h + j - 2), four);
        q[j] = _mm256_or_si256(_mm256_and_si256(shift16(qs, 2 * j), m3), hb);
      }
      const __m512i p01 = _mm512_maddubs_epi16(join(q[0], q[1]), _mm512_loadu_si512(x + 128 * h));
      const __m512i p23 = _mm512_maddubs_epi16(join(q[2], q[3]), _mm512_loadu_si512(x + 128 * h + 64));
      sumi = _mm512_dpwssd_epi32(sumi, p01, _mm512_permutexvar_epi16(cs.sel[2 * h], sc));
      sumi2 = _mm512_dpwssd_epi32(sumi2, p23, _mm512_permutexvar_epi16(cs.sel[2 * h + 1], sc));
    }
    sumi = _mm512_add_epi32(sumi, sumi2);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(xd[b] * half(w[b].d)), acc);
  }
  return hsum16(acc);
}

template <typename Block, typename Dot>
void rows(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy,
          Dot dot) {
  const int64_t nb = a.cols / kQkK;
  for (int64_t j = j0; j < j1; ++j) {
    const auto* wr = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w.data) + j * w.row_bytes);
    for (int64_t i = 0; i < a.m; ++i) {
      y[i * ldy + j] = dot(wr, a.q8_qs + i * a.cols, a.q8k_d + i * nb, a.q8k_bsums + i * nb * 16, nb);
    }
  }
}

}  // namespace

void rows_q2_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ2_K>(w, a, j0, j1, y, ldy, dot_q2_k);
}

void rows_q3_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ3_K>(w, a, j0, j1, y, ldy, dot_q3_k);
}

}  // namespace ridge::kernels::quant_avx512
