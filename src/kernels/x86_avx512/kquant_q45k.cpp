// AVX-512 VNNI matmul for Q4_K and Q5_K weights with Q8_K activations: the panel GEMM of
// kquant_panel.h with these formats' unpacking.
//
// Super-block (blocks.h): 8 sub-blocks of 32, element 32 s + l = d * sc_s * q - dmin * mn_s,
// q in [0, 15] (Q4_K: nibble s % 2 of qs[32 (s / 2) + l]) or [0, 31] (Q5_K: plus bit s of qh[l]
// as bit 4). Per row and x row the integer totals are
//   isum = sum_s sc_s * dot(q_s, x_s)    (vpdpbusd per sub-block, vpmulld by the lane's sc_s)
//   msum = sum_s mn_s * (bsum_2s + bsum_2s+1)   (4 vpdpwssd: int16 mins pairs x int16 x pairs)
// and the canonical float step (every path, every lane) is
//   acc = fma(fmsub(float(isum), d, float(msum) * dmin), dx, acc).
//
// GCC 12's avx512fintrin.h feeds an uninitialized pass-through operand to the unmasked forms of
// many intrinsics (GCC bug 105593); -Wmaybe-uninitialized then fires inside our functions.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/quant/blocks.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/x86_avx512/kquant_panel.h"

namespace ridge::kernels::kquant_avx512 {
namespace {

// One super-block of a panel, unpacked (5 KB).
struct alignas(64) PackedQ45 {
  __m512i q[64];    // q[8 s + t] lane r: quants 32 s + 4 t .. + 3 of row r (unsigned bytes)
  __m512i sc[8];    // sc_s per lane (int32)
  __m512i mins[4];  // (mn_2t, mn_2t+1) per lane (int16 pairs)
  __m512 d, dmin;
};

template <bool kFive>
struct FormatQ45 {
  using Packed = PackedQ45;
  static constexpr int kSubs = 8;
  static constexpr int kGroups = 8;  // 4-byte groups per sub-block
  static constexpr int kExtra = 4;   // x pair sums per block, two int16 per int32
  static constexpr int64_t kBlockBytes = kFive ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  static constexpr int64_t kQsOffset = kFive ? 48 : 16;

  // extra[(i nb + b) 4 + t] = (bsum_4t + bsum_4t+1) | (bsum_4t+2 + bsum_4t+3) << 16: the pair
  // sums of sub-blocks 2t, 2t + 1 (|.| <= 32 * 127, int16).
  static void prepare_extra(const Acts& a, const KActs& x) {
    for (int64_t ib = 0; ib < a.m * x.nb; ++ib) {
      const int16_t* bs = a.q8k_bsums + ib * 16;
      for (int t = 0; t < 4; ++t) {
        const auto lo = static_cast<uint16_t>(bs[4 * t] + bs[4 * t + 1]);
        const auto hi = static_cast<uint16_t>(bs[4 * t + 2] + bs[4 * t + 3]);
        x.extra[ib * 4 + t] = static_cast<int32_t>(lo | (static_cast<uint32_t>(hi) << 16));
      }
    }
  }

  static __m512i part_init(const KActs&, int64_t, int64_t, int) { return _mm512_setzero_si512(); }
  static constexpr bool kRowDecode = false;
  static void decode_rows(const WeightView&, const Acts&, const KActs&, int64_t, int64_t, float*) {}

  static void pack(const Panel& p, int64_t b, Packed* out) {
    const int64_t off = b * kBlockBytes;
    prefetch_next(p, off, kBlockBytes);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i bit4 = _mm512_set1_epi8(0x10);
    __m512i qh[8];
    if constexpr (kFive) transpose_32(p, off + 16, qh);
    for (int c = 0; c < 4; ++c) {  // qs bytes 32c .. 32c + 31: sub-blocks 2c (low), 2c + 1
      __m512i t8[8];
      transpose_32(p, off + kQsOffset + 32 * c, t8);
      for (int t = 0; t < 8; ++t) {
        __m512i lo = _mm512_and_si512(t8[t], low4);
        __m512i hi = _mm512_and_si512(_mm512_srli_epi16(t8[t], 4), low4);
        if constexpr (kFive) {  // bit s of each qh byte to bit 4 (16-bit shifts: see below)
          lo = _mm512_or_si512(lo, _mm512_and_si512(shift_to_4(qh[t], 2 * c), bit4));
          hi = _mm512_or_si512(hi, _mm512_and_si512(shift_to_4(qh[t], 2 * c + 1), bit4));
        }
        _mm512_store_si512(&out->q[8 * (2 * c) + t], lo);
        _mm512_store_si512(&out->q[8 * (2 * c + 1) + t], hi);
      }
    }
    // Scales (scale_packing.h): g1 = bytes 0..3 of the 12 (sc0..3 low 6 bits, sc4..7 top 2),
    // g2 = bytes 4..7 (the same for the mins), g3 = bytes 8..11 (low nibbles of sc4..7 / mn4..7).
    __m512i g[4];  // g0 = d | dmin << 16
    transpose_16(p, off, g);
    const __m512i g0 = g[0], g1 = g[1], g2 = g[2], g3 = g[3];
    const __m512i m6 = _mm512_set1_epi32(63), m4 = _mm512_set1_epi32(15);
    const __m512i m2 = _mm512_set1_epi32(3);
    __m512i mn[8];
    for (int i = 0; i < 4; ++i) {
      _mm512_store_si512(&out->sc[i], _mm512_and_si512(_mm512_srli_epi32(g1, 8 * i), m6));
      mn[i] = _mm512_and_si512(_mm512_srli_epi32(g2, 8 * i), m6);
      const __m512i sc_top = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(g1, 8 * i + 6), m2), 4);
      const __m512i mn_top = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(g2, 8 * i + 6), m2), 4);
      _mm512_store_si512(&out->sc[4 + i],
                         _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(g3, 8 * i), m4), sc_top));
      mn[4 + i] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(g3, 8 * i + 4), m4), mn_top);
    }
    for (int t = 0; t < 4; ++t) {
      _mm512_store_si512(&out->mins[t], _mm512_or_si512(mn[2 * t], _mm512_slli_epi32(mn[2 * t + 1], 16)));
    }
    out->d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(g0));
    out->dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(g0, 16)));
  }

  // Bit s of every byte to bit 4 (other bits garbage, masked by the caller). The 16-bit shifts
  // are safe: bit 4 of each byte comes from bit s of the same byte.
  static __m512i shift_to_4(__m512i v, int s) {
    return s <= 4 ? _mm512_slli_epi16(v, static_cast<unsigned>(4 - s))
                  : _mm512_srli_epi16(v, static_cast<unsigned>(s - 4));
  }

  static __m512 finish(const Packed& p, const KActs& x, int64_t i, int64_t b, __m512i isum,
                       __m512 acc) {
    const int32_t* pairs = x.extra + (i * x.nb + b) * 4;
    __m512i msum = _mm512_setzero_si512();
    for (int t = 0; t < 4; ++t) msum = _mm512_dpwssd_epi32(msum, p.mins[t], bcst32(pairs + t));
    const __m512 v = _mm512_fmsub_ps(_mm512_cvtepi32_ps(isum), p.d,
                                     _mm512_mul_ps(_mm512_cvtepi32_ps(msum), p.dmin));
    return _mm512_fmadd_ps(v, _mm512_set1_ps(x.d[i * x.nb + b]), acc);
  }
};

}  // namespace
}  // namespace ridge::kernels::kquant_avx512

namespace ridge::kernels::quant_avx512 {

void rows_q4_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  kquant_avx512::rows_k<kquant_avx512::FormatQ45<false>>(w, a, j0, j1, y, ldy);
}

void rows_q5_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  kquant_avx512::rows_k<kquant_avx512::FormatQ45<true>>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::quant_avx512
