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
  // AMX (kquant_panel.h): q 0..15 (Q4_K) or 0..31 (Q5_K) times the digits of sc 0..63 in base 8
  // (0..7: at most 105) or base 4 (0..3: at most 93).
  static constexpr int kQuantOffset = 0;
  static constexpr int kAmxDigits = kFive ? 3 : 2;
  static constexpr int kAmxDigitBits = kFive ? 2 : 3;
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
  // m = 1 over kRows row by row for Q5_K only: its panel unpacking (the qh transposes) costs more
  // than the row layout; for Q4_K the panel is faster (docs/tuning.md, "Q5_K decodes rows").
  // Both also read kPanels16
  // (weight_layout.h), where the transposes happen at load and decode takes layout_step.
  static constexpr bool kRowDecode = kFive;
  static void decode_rows(const WeightView& w, const Acts& a, const KActs& x, int64_t j0,
                          int64_t j1, float* y);

  // Super-block b of a panel's 16 kRows rows: the fields transposed to one row per lane.
  struct RowsSource {
    const Panel& p;
    int64_t off;
    RowsSource(const Panel& panel, int64_t b) : p(panel), off(b * kBlockBytes) {
      prefetch_next(p, off, kBlockBytes);
    }
    void qh(__m512i out[8]) const { transpose_32(p, off + 16, out); }
    void quants(int c, __m512i out[8]) const { transpose_32(p, off + kQsOffset + 32 * c, out); }
    void head(__m512i out[4]) const { transpose_16(p, off, out); }
  };
  // The same registers loaded from a kPanels16 super-block (weight_layout.h): the 128 qs bytes as
  // 32 registers, then (Q5_K) the 8 qh registers, the 3 scale registers and d | dmin.
  static constexpr int64_t kLayoutScales = kFive ? 2560 : 2048;
  struct LayoutSource : LayoutBlock<kBlockBytes> {
    using LayoutBlock<kBlockBytes>::LayoutBlock;
    using LayoutBlock<kBlockBytes>::blk;
    void qh(__m512i out[8]) const {
      for (int t = 0; t < 8; ++t) out[t] = _mm512_loadu_si512(blk + 2048 + 64 * t);
    }
    void quants(int c, __m512i out[8]) const {
      for (int t = 0; t < 8; ++t) out[t] = _mm512_loadu_si512(blk + 64 * (8 * c + t));
    }
    void head(__m512i out[4]) const {
      out[0] = _mm512_loadu_si512(blk + kLayoutScales + 192);
      for (int q = 0; q < 3; ++q) out[1 + q] = _mm512_loadu_si512(blk + kLayoutScales + 64 * q);
    }
  };

  static void pack(const Panel& p, int64_t b, Packed* out) { unpack(RowsSource(p, b), out); }
  static void pack(const LayoutPanel& p, int64_t b, Packed* out) {
    const LayoutSource src(p, b);
    src.prefetch_all();
    unpack(src, out);
  }

  // The quants of sub-blocks 2c (lo) and 2c + 1 (hi), group t, from their qs register q and (Q5_K)
  // qh register t.
  static void split(__m512i q, __m512i qh, int c, __m512i* lo, __m512i* hi) {
    const __m512i low4 = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
    *lo = _mm512_and_si512(q, low4);
    *hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
    if constexpr (kFive) {  // bit s of each qh byte to bit 4 (16-bit shifts: see below)
      *lo = _mm512_or_si512(*lo, _mm512_and_si512(shift_to_4(qh, 2 * c), bit4));
      *hi = _mm512_or_si512(*hi, _mm512_and_si512(shift_to_4(qh, 2 * c + 1), bit4));
    }
  }

  template <typename Source>
  static void unpack(const Source& src, Packed* out) {
    __m512i qh[8] = {};
    if constexpr (kFive) src.qh(qh);
    for (int c = 0; c < 4; ++c) {  // qs bytes 32c .. 32c + 31: sub-blocks 2c (low), 2c + 1
      __m512i t8[8];
      src.quants(c, t8);
      for (int t = 0; t < 8; ++t) split(t8[t], qh[t], c, &out->q[8 * (2 * c) + t], &out->q[8 * (2 * c + 1) + t]);
    }
    __m512i g[4];  // g0 = d | dmin << 16
    src.head(g);
    unpack_scales(g, out->sc, out->mins, &out->d, &out->dmin);
  }

  // The head registers (g0 = d | dmin << 16, then scale bytes 0..3, 4..7, 8..11) to the sub-block
  // scales sc[8] (int32 lanes), the mins as int16 pairs mins[4], and d, dmin. Scales
  // (scale_packing.h): g1 = sc0..3 low 6 bits, sc4..7 top 2; g2 = the same for the mins; g3 = low
  // nibbles of sc4..7 / mn4..7.
  static void unpack_scales(const __m512i g[4], __m512i sc[8], __m512i mins[4], __m512* d, __m512* dmin) {
    const __m512i g0 = g[0], g1 = g[1], g2 = g[2], g3 = g[3];
    const __m512i m6 = _mm512_set1_epi32(63), m4 = _mm512_set1_epi32(15);
    const __m512i m2 = _mm512_set1_epi32(3);
    __m512i mn[8];
    for (int i = 0; i < 4; ++i) {
      sc[i] = _mm512_and_si512(_mm512_srli_epi32(g1, 8 * i), m6);
      mn[i] = _mm512_and_si512(_mm512_srli_epi32(g2, 8 * i), m6);
      const __m512i sc_top = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(g1, 8 * i + 6), m2), 4);
      const __m512i mn_top = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(g2, 8 * i + 6), m2), 4);
      sc[4 + i] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(g3, 8 * i), m4), sc_top);
      mn[4 + i] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(g3, 8 * i + 4), m4), mn_top);
    }
    for (int t = 0; t < 4; ++t) mins[t] = _mm512_or_si512(mn[2 * t], _mm512_slli_epi32(mn[2 * t + 1], 16));
    *d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(g0));
    *dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(g0, 16)));
  }

  // Bit s of every byte to bit 4 (other bits garbage, masked by the caller). The 16-bit shifts
  // are safe: bit 4 of each byte comes from bit s of the same byte.
  static __m512i shift_to_4(__m512i v, int s) {
    return s <= 4 ? _mm512_slli_epi16(v, static_cast<unsigned>(4 - s))
                  : _mm512_srli_epi16(v, static_cast<unsigned>(s - 4));
  }

  static __m512 finish(const Packed& p, const KActs& x, int64_t i, int64_t b, __m512i isum,
                       __m512 acc) {
    return finish_with_mins<4>(p.mins, p.d, p.dmin, x, i, b, isum, acc);
  }

  // Decode (m <= kDirectRows) of a kPanels16 super-block without the Packed round trip through
  // L1: each 64-byte load is split into its two sub-blocks' nibbles in registers and fed to
  // vpdpbusd at once. The integer totals are pack + step's (exact int32, summed in another
  // order), then the same finish: the same bits.
  template <int MR>
  RIDGE_STEP_INLINE static void layout_step(const LayoutPanel& panel, const KActs& x, int64_t b, __m512 (&acc)[MR][1]) {
    const LayoutSource src(panel, b);
    __m512i g[4], sc[8], mins[4];
    __m512 d, dmin;
    src.head(g);
    unpack_scales(g, sc, mins, &d, &dmin);
    __m512i qh[8] = {};
    if constexpr (kFive) src.qh(qh);
    const int8_t* xb = x.q + kSuperBlock * b;
    __m512i tot[MR];
    for (int i = 0; i < MR; ++i) tot[i] = _mm512_setzero_si512();
    RIDGE_UNROLL
    for (int c = 0; c < 4; ++c) {  // sub-blocks 2c (low nibbles) and 2c + 1 (high)
      __m512i lo_sum[MR], hi_sum[MR];
      for (int i = 0; i < MR; ++i) lo_sum[i] = hi_sum[i] = _mm512_setzero_si512();
      __m512i t8[8];
      src.prefetch_quarter(c);
      src.quants(c, t8);
      RIDGE_UNROLL
      for (int t = 0; t < 8; ++t) {
        __m512i lo, hi;
        if constexpr (kFive) {
          split(t8[t], qh[t], c, &lo, &hi);
        } else {  // Q4_K: the high nibbles left in place (16 q): one AND instead of shift + AND
          lo = _mm512_and_si512(t8[t], _mm512_set1_epi8(0x0f));
          hi = _mm512_andnot_si512(_mm512_set1_epi8(0x0f), t8[t]);
        }
        RIDGE_UNROLL
        for (int i = 0; i < MR; ++i) {
          const int8_t* xs = xb + i * x.cols + 4 * (16 * c + t);  // sub-block 2c, group t
          lo_sum[i] = dpbusd_bcst(lo_sum[i], lo, xs);
          hi_sum[i] = dpbusd_bcst(hi_sum[i], hi, xs + 32);
        }
      }
      // Q4_K: the total is kept at 16x (the low sub-block's scale times 16), exact in int32:
      // 16 * 256 * 15 * 128 * 63 < 2^31; one arithmetic shift at the end gives the same isum.
      const __m512i sc_lo = kFive ? sc[2 * c] : _mm512_slli_epi32(sc[2 * c], 4);
      RIDGE_UNROLL
      for (int i = 0; i < MR; ++i) {
        tot[i] = _mm512_add_epi32(tot[i], _mm512_mullo_epi32(lo_sum[i], sc_lo));
        tot[i] = _mm512_add_epi32(tot[i], _mm512_mullo_epi32(hi_sum[i], sc[2 * c + 1]));
      }
    }
    if constexpr (!kFive) {
      for (int i = 0; i < MR; ++i) tot[i] = _mm512_srai_epi32(tot[i], 4);
    }
    for (int i = 0; i < MR; ++i) acc[i][0] = finish_with_mins<4>(mins, d, dmin, x, i, b, tot[i], acc[i][0]);
  }

  struct alignas(64) RowLanes {
    int32_t isum[kPanel], msum[kPanel];
    uint16_t d[kPanel], dmin[kPanel];
  };
  static void row_block(const uint8_t* blk, const int8_t* xr, const int16_t* bsums, RowLanes* out,
                        int r);
  static __m512 lane_step(const RowLanes& l, float dx, __m512 acc) {
    const auto half16 = [](const uint16_t* p) {
      return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
    };
    return float_step_min(_mm512_load_si512(l.isum), _mm512_load_si512(l.msum), half16(l.d),
                          half16(l.dmin), dx, acc);
  }
};

// m = 1 (decode_streamed in kquant_panel.h, as Q6_K): each row's super-block reduced to its exact
// integers isum and msum in the row layout.
//
// Row layout: one 64-byte load of qs[64 h ..] holds sub-blocks 4h (low nibbles of its first
// 32 bytes), 4h + 1 (their high nibbles), 4h + 2 and 4h + 3 (the same for the last 32). x is
// reordered once per call so that a 64-byte load matches: 32-byte chunks 0, 2, 1, 3, 4, 6, 5, 7
// of each super-block. vpmaddubsw (q <= 31, |x| <= 127: no saturation) then vpdpwssd by the
// sub-block scale of each 16-bit lane gives the exact isum.
template <bool kFive>
void FormatQ45<kFive>::row_block(const uint8_t* blk, const int8_t* xr, const int16_t* bsums,
                                 RowLanes* out, int r) {
  std::memcpy(&out->d[r], blk, 2);
  std::memcpy(&out->dmin[r], blk + 2, 2);
  // The 12 scale bytes to sc0..7, mn0..7 (one byte each), on 32-bit words.
  uint32_t u[4];
  std::memcpy(u, blk + 4, 12);
  const uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
  u[3] = ((u[2] >> 4) & m4) | (((u[1] >> 6) & m2) << 4);  // mn4..7
  const uint32_t mn03 = u[1] & m6;
  u[1] = (u[2] & m4) | (((u[0] >> 6) & m2) << 4);  // sc4..7
  u[2] = mn03;
  u[0] &= m6;  // sc0..3
  const __m256i scmn = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(u)));
  const __m512i sc = _mm512_zextsi256_si512(scmn);
  // msum = sum_s mn_s (bsum_2s + bsum_2s+1): int16 pairs (mn_s, mn_s) against the bsums.
  const __m256i mn_pairs =
      _mm256_permutexvar_epi16(_mm256_setr_epi16(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15), scmn);
  const __m256i mprod = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums)), mn_pairs);
  out->msum[r] = quant_avx512::hsum_epi32(mprod);

  const __m512i low4 = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
  const uint8_t* qs = blk + kQsOffset;
  __m512i qh = _mm512_setzero_si512();
  if constexpr (kFive) qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16)));
  const auto halves = [](int a, int b) {
    return _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(a)), _mm256_set1_epi16(static_cast<short>(b)), 1);
  };
  __m512i sum_lo = _mm512_setzero_si512(), sum_hi = _mm512_setzero_si512();
  for (int h = 0; h < 2; ++h) {
    const __m512i q = _mm512_loadu_si512(qs + 64 * h);
    __m512i lo = _mm512_and_si512(q, low4);                          // sub-blocks 4h | 4h + 2
    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);    // 4h + 1 | 4h + 3
    if constexpr (kFive) {  // bit s of qh[l] to bit 4 (16-bit shifts: shift_to_4's argument)
      const __m512i b_lo = h == 0 ? _mm512_sllv_epi16(qh, halves(4, 2)) : _mm512_srlv_epi16(qh, halves(0, 2));
      const __m512i b_hi = h == 0 ? _mm512_sllv_epi16(qh, halves(3, 1)) : _mm512_srlv_epi16(qh, halves(1, 3));
      lo = _mm512_or_si512(lo, _mm512_and_si512(b_lo, bit4));
      hi = _mm512_or_si512(hi, _mm512_and_si512(b_hi, bit4));
    }
    const __m512i p_lo = _mm512_maddubs_epi16(lo, _mm512_loadu_si512(xr + 128 * h));
    const __m512i p_hi = _mm512_maddubs_epi16(hi, _mm512_loadu_si512(xr + 128 * h + 64));
    sum_lo = _mm512_dpwssd_epi32(sum_lo, p_lo, _mm512_permutexvar_epi16(halves(4 * h, 4 * h + 2), sc));
    sum_hi = _mm512_dpwssd_epi32(sum_hi, p_hi, _mm512_permutexvar_epi16(halves(4 * h + 1, 4 * h + 3), sc));
  }
  out->isum[r] = quant_avx512::hsum_epi32(_mm512_add_epi32(sum_lo, sum_hi));
}

template <bool kFive>
void FormatQ45<kFive>::decode_rows(const WeightView& w, const Acts& a, const KActs& x, int64_t j0,
                                   int64_t j1, float* y) {
  const ThreadScratch scratch(kScratchKernelRows, static_cast<size_t>(x.cols));
  auto* const xr = static_cast<int8_t*>(scratch.data());
  constexpr int kChunkOrder[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int64_t b = 0; b < x.nb; ++b) {
    for (int c = 0; c < 8; ++c) {
      std::memcpy(xr + kSuperBlock * b + 32 * c, x.q + kSuperBlock * b + 32 * kChunkOrder[c], 32);
    }
  }
  decode_streamed<FormatQ45<kFive>>(w, a, x, xr, j0, j1, y);
}

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
