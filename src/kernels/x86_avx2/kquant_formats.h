// The AVX2 K formats as the decode dot (quant_dot.cpp) and the panel GEMM (kquant_gemm.h) both
// read them: a super-block's 256 quants unpacked to unsigned bytes in element order (8 registers
// of 32), its sub-block scales, the terms that go through the activations' bsums, and the
// canonical float step. Include only from x86_avx2/ files (AVX2 flags; internal linkage).
//
// Canonical order (batch invariance, matmul_driver.h). Per output and super-block b, the exact
// integers isum_b (the quants' dot with x, scales applied) and bias_b are reduced first, then
//   formats with mins (Q2_K, Q4_K, Q5_K; bias_b = the mins' dot with the bsums):
//     acc = fma(fmsub(float(isum_b), d, float(bias_b) * dmin), dx, acc)
//   formats with an offset (Q3_K -4, Q6_K -32; bias_b = sum_s sc_s bsum_s):
//     acc = fma(float(isum_b + offset * bias_b), d * dx, acc)
// block after block from 0 (the AVX-512 panel kernels' steps), in the output's f32 lane (8 rows
// at a time in both paths): the same IEEE operations, so the same bits
// whatever the batch (m), the panel split or the thread count.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/quant/blocks.h"
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

// Moves bit `bit` of every byte to bit 4 (other bits: garbage, to be masked with 0x10). The
// 16-bit shifts carry bits across the byte boundary only into positions the mask drops.
inline __m256i bit_to_4(__m256i v, int bit) {
  return bit <= 4 ? _mm256_sll_epi16(v, _mm_cvtsi32_si128(4 - bit))
                  : _mm256_srl_epi16(v, _mm_cvtsi32_si128(bit - 4));
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

// Register n = 4 h + j of the 2-bit formats: bits 2j of qs[32 h + l], elements 128 h + 32 j + l.
inline __m256i two_bits(const uint8_t* qs, int n) {
  const __m256i v = load32(qs + 32 * (n / 4));
  return _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(2 * (n % 4))), _mm256_set1_epi8(3));
}

// A format F gives, per super-block: unpack (8 registers of unsigned quants, q[n] = elements
// 32 n .. 32 n + 31), scale_words (the kSubs sub-block scales as int16, 8 of 32 elements or 16
// of 16), bias_words (the bias weights as int16, pair k = words 2k, 2k + 1; kBiasPairs of them
// used) against x_bias (the activation side, from the block's 16 bsums), and the float scales.
// Formats with an offset (kMins false) subtract bias << kOffsetShift from the integer total.

// Q4_K (kFive = false) and Q5_K: 8 sub-blocks of 32, x = d sc q - dmin mn.
template <bool kFive>
struct FormatQ45K {
  using Block = std::conditional_t<kFive, BlockQ5_K, BlockQ4_K>;
  static constexpr int kSubs = 8;
  static constexpr bool kMins = true;
  static constexpr int kOffsetShift = 0;
  // 4-element groups summed in int16 before the scale: a vpmaddubsw pair is at most
  // 2 * 15 * 127 = 3810 (Q4_K, 8 groups: 30480) or 2 * 31 * 127 = 7874 (Q5_K, 4: 31496).
  static constexpr int kChain = kFive ? 4 : 8;
  static constexpr int kBiasPairs = 4;  // the mins against P_s = bsum_2s + bsum_2s+1

  static void unpack(const Block& blk, __m256i q[8]) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    __m256i qh = _mm256_setzero_si256();
    if constexpr (kFive) qh = load32(blk.qh);
    for (int g = 0; g < 4; ++g) {
      const __m256i v = load32(blk.qs + 32 * g);
      __m256i lo = _mm256_and_si256(v, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      if constexpr (kFive) {  // bit 2g of qh[l] -> bit 4 of the low quant, bit 2g+1 -> high
        const __m256i bit4 = _mm256_set1_epi8(0x10);
        lo = _mm256_or_si256(lo, _mm256_and_si256(bit_to_4(qh, 2 * g), bit4));
        hi = _mm256_or_si256(hi, _mm256_and_si256(bit_to_4(qh, 2 * g + 1), bit4));
      }
      q[2 * g] = lo;
      q[2 * g + 1] = hi;
    }
  }
  static __m256i scale_words(const Block& blk) { return _mm256_cvtepu8_epi16(unpack_k4_scales(blk.scales)); }
  static __m256i bias_words(const Block& blk) {
    return _mm256_cvtepu8_epi16(_mm_srli_si128(unpack_k4_scales(blk.scales), 8));
  }
  static __m256i x_bias(const int16_t* bsums) {
    const __m256i bs = load32(bsums);
    const __m128i p = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
    return _mm256_zextsi128_si256(p);
  }
  static float d(const Block& blk) { return half(blk.d); }
  static float dmin(const Block& blk) { return half(blk.dmin); }
};

// Q6_K: 16 sub-blocks of 16, x = d sc (q - 32), q = 4 low bits from ql | 2 high bits from qh.
struct FormatQ6K {
  using Block = BlockQ6_K;
  static constexpr int kSubs = 16;
  static constexpr bool kMins = false;
  static constexpr int kOffsetShift = 5;  // -32: the scales again, against the bsums
  static constexpr int kChain = 2;        // a pair is at most 2 * 63 * 127 = 16002
  static constexpr int kBiasPairs = 8;

  static void unpack(const Block& blk, __m256i q[8]) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i hmask = _mm256_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load32(blk.ql + 64 * h);
      const __m256i ql1 = load32(blk.ql + 64 * h + 32);
      const __m256i qh = load32(blk.qh + 32 * h);
      q[4 * h] = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), hmask));
      q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), hmask));
      q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), _mm256_and_si256(qh, hmask));
      q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                     _mm256_and_si256(_mm256_srli_epi16(qh, 2), hmask));
    }
  }
  static __m256i scale_words(const Block& blk) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales)));
  }
  static __m256i bias_words(const Block& blk) { return scale_words(blk); }
  static __m256i x_bias(const int16_t* bsums) { return load32(bsums); }
  static float d(const Block& blk) { return half(blk.d); }
  static float dmin(const Block&) { return 0.0f; }
};

// Q2_K: 16 sub-blocks of 16, x = d (sc & 15) q - dmin (sc >> 4), q in 0..3.
struct FormatQ2K {
  using Block = BlockQ2_K;
  static constexpr int kSubs = 16;
  static constexpr bool kMins = true;
  static constexpr int kOffsetShift = 0;
  static constexpr int kChain = 4;        // a pair is at most 2 * 3 * 127 = 762
  static constexpr int kBiasPairs = 8;    // the mins against the bsums

  static void unpack(const Block& blk, __m256i q[8]) {
    for (int n = 0; n < 8; ++n) q[n] = two_bits(blk.qs, n);
  }
  static __m128i bytes(const Block& blk) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales)); }
  static __m256i scale_words(const Block& blk) {
    return _mm256_cvtepu8_epi16(_mm_and_si128(bytes(blk), _mm_set1_epi8(0x0f)));
  }
  static __m256i bias_words(const Block& blk) {
    return _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(bytes(blk), 4), _mm_set1_epi8(0x0f)));
  }
  static __m256i x_bias(const int16_t* bsums) { return load32(bsums); }
  static float d(const Block& blk) { return half(blk.d); }
  static float dmin(const Block& blk) { return half(blk.dmin); }
};

// Q3_K: 16 sub-blocks of 16, x = d (sc - 32) (q2 + 4 hbit - 4); u = q2 | hbit << 2 in 0..7 is
// the unpacked quant, the -4 goes through the bsums.
struct FormatQ3K {
  using Block = BlockQ3_K;
  static constexpr int kSubs = 16;
  static constexpr bool kMins = false;
  static constexpr int kOffsetShift = 2;  // -4
  static constexpr int kChain = 4;        // a pair is at most 2 * 7 * 127 = 1778
  static constexpr int kBiasPairs = 8;

  static void unpack(const Block& blk, __m256i q[8]) {
    const __m256i hm = load32(blk.hmask);
    for (int n = 0; n < 8; ++n) {
      // hmask bit n moved to bit 2 (value 4); the 16-bit shifts only carry bits across the byte
      // boundary into positions the mask drops
      const __m256i moved = n >= 2 ? _mm256_srl_epi16(hm, _mm_cvtsi32_si128(n - 2))
                                   : _mm256_sll_epi16(hm, _mm_cvtsi32_si128(2 - n));
      q[n] = _mm256_or_si256(two_bits(blk.qs, n), _mm256_and_si256(moved, _mm256_set1_epi8(4)));
    }
  }
  static __m256i scale_words(const Block& blk) {
    return _mm256_sub_epi16(_mm256_cvtepu8_epi16(q3_k_scales(blk)), _mm256_set1_epi16(32));
  }
  static __m256i bias_words(const Block& blk) { return scale_words(blk); }
  static __m256i x_bias(const int16_t* bsums) { return load32(bsums); }
  static float d(const Block& blk) { return half(blk.d); }
  static float dmin(const Block&) { return 0.0f; }
};

}  // namespace
}  // namespace ridge::kernels::quant_avx2
