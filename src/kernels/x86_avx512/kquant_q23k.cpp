// AVX-512 VNNI matmul for Q2_K and Q3_K weights with Q8_K activations: the panel GEMM of
// kquant_panel.h with these formats' unpacking.
//
// Super-block (blocks.h): 16 sub-blocks of 16. Element e = 128 h + 32 j + l takes its 2 low bits
// from bits 2j, 2j + 1 of qs[32 h + l] and belongs to sub-block s = 8 h + 2 j + l / 16. So a qs
// dword (4 bytes, l = 4t .. 4t + 3) holds 4 consecutive elements of each of 4 sub-blocks
// (j = 0..3): one shift and mask per j gives vpdpbusd's 4 unsigned bytes per lane.
//   Q2_K: e = d * sc_s * q - dmin * mn_s, q in [0, 3], (sc_s, mn_s) the low / high nibble of
//         scale byte s. isum = sum_s sc_s dot(q_s, x_s), msum = sum_s mn_s bsum_s (8 vpdpwssd:
//         int16 mins pairs x int16 bsum pairs), then float_step_min.
//   Q3_K: e = d * (sc_s - 32) * (q + 4 hbit - 4), hbit = bit 4h + j of hmask[l], sc_s 6 bits
//         (blocks.h). The chain of sub-block s starts from -4 bsum_s (OffsetChains) and adds
//         dot(q + 4 hbit, x_s) in [0, 7] per byte; times sc_s - 32, then float_step.
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

// Bit s of every byte to bit `to` (other bits garbage, masked by the caller). The 16-bit shifts
// are safe: bit `to` of each byte comes from bit s of the same byte.
inline __m512i shift_bit(__m512i v, int s, int to) {
  return s <= to ? _mm512_slli_epi16(v, static_cast<unsigned>(to - s))
                 : _mm512_srli_epi16(v, static_cast<unsigned>(s - to));
}

// Bits 2j, 2j + 1 of every byte of a qs register: elements 32 j + 4t .. + 3 of each lane's row.
inline __m512i quant2(__m512i qs, int j) {
  return _mm512_and_si512(j == 0 ? qs : _mm512_srli_epi16(qs, static_cast<unsigned>(2 * j)), _mm512_set1_epi8(3));
}

// Bits 2j, 2j + 1 of every byte of a qs register left in place: 4^j times the quants (at most
// 192, still an unsigned byte), one AND where quant2 needs a shift as well (Q2_K's decode, whose
// chains then hold 4^j times their partials). Q3_K gained nothing from the same trick
// (docs/tuning.md, "Q2_K bits in place").
inline __m512i in_place2(__m512i qs, int j) { return _mm512_and_si512(qs, _mm512_set1_epi8(static_cast<char>(3 << (2 * j)))); }

// The quants of j from a qs register (half h), with Q3_K's high bit (from the hmask register of
// the same bytes) when kHigh.
template <bool kHigh>
inline __m512i quant_of(__m512i qs, __m512i hmask, int h, int j) {
  __m512i q = quant2(qs, j);
  if constexpr (kHigh) q = _mm512_or_si512(q, _mm512_and_si512(shift_bit(hmask, 4 * h + j, 2), _mm512_set1_epi8(4)));
  return q;
}

// One super-block of a panel, unpacked.
struct alignas(64) PackedQ2 {
  __m512i q[64];    // q[4 s + t] lane r: quants 16 s + 4 t .. + 3 of row r (unsigned bytes)
  __m512i sc[16];   // sc_s per lane (int32)
  __m512i mins[8];  // (mn_4q+u, mn_4q+u+2) per lane at 2q + u (int16 pairs, FormatQ2::nibble_pairs)
  __m512 d, dmin;
};

struct alignas(64) PackedQ3 {
  __m512i q[64];   // as PackedQ2's, high bit included (0..7)
  __m512i sc[16];  // sc_s - 32 per lane (int32)
  __m512 d;
};

// A super-block's quants for the pack: emit(s, t, q) for every sub-block s and group t (quants
// 16 s + 4 t .. + 3 of each lane's row).
template <bool kHigh, typename Source, typename Emit>
inline void for_each_quant(const Source& src, const Emit& emit) {
  __m512i hm[8] = {};
  if constexpr (kHigh) src.hmask(hm);
  for (int h = 0; h < 2; ++h) {
    for (int t = 0; t < 8; ++t) {
      const __m512i qs = src.qs(8 * h + t);
      for (int j = 0; j < 4; ++j) emit(8 * h + 2 * j + t / 4, t % 4, quant_of<kHigh>(qs, hm[t], h, j));
    }
  }
}

struct FormatQ2 {
  // AMX (kquant_panel.h): q 0..3 times sc 0..15 (at most 45) in one digit.
  static constexpr int kQuantOffset = 0;
  static constexpr int kAmxDigits = 1;
  static constexpr int kAmxDigitBits = 4;
  using Packed = PackedQ2;
  static constexpr int kSubs = 16;
  static constexpr int kGroups = 4;
  static constexpr int kExtra = 8;  // x bsum pairs per block, two int16 per int32
  static constexpr int64_t kBlockBytes = sizeof(BlockQ2_K);
  static constexpr bool kRowDecode = false;

  // extra[(i nb + b) 8 + 2q + u] = bsum_4q+u | bsum_4q+u+2 << 16 (|.| <= 16 * 127: int16), the
  // pairs of nibble_pairs.
  static void prepare_extra(const Acts& a, const KActs& x) {
    for (int64_t ib = 0; ib < a.m * x.nb; ++ib) {
      const int16_t* bs = a.q8k_bsums + ib * 16;
      for (int k = 0; k < 8; ++k) {
        const int s = 4 * (k / 2) + k % 2;
        const auto lo = static_cast<uint16_t>(bs[s]), hi = static_cast<uint16_t>(bs[s + 2]);
        x.extra[ib * 8 + k] = static_cast<int32_t>(lo | (static_cast<uint32_t>(hi) << 16));
      }
    }
  }
  static __m512i part_init(const KActs&, int64_t, int64_t, int) { return _mm512_setzero_si512(); }

  // Super-block b of a panel's 16 kRows rows: the fields transposed to one row per lane.
  struct RowsSource : QsRows<16, kBlockBytes> {
    using QsRows::QsRows;
    void scales(__m512i out[4]) const { transpose_16(p, off, out); }
    __m512i d_dmin() const { return gather_dword(p, off + 80); }
  };
  // The same registers loaded from a kPanels16 super-block (weight_layout.h).
  struct LayoutSource : LayoutBlock<kBlockBytes> {
    using LayoutBlock::LayoutBlock;
    __m512i qs(int g) const { return _mm512_loadu_si512(blk + 64 * g); }
    void scales(__m512i out[4]) const {
      for (int q = 0; q < 4; ++q) out[q] = _mm512_loadu_si512(blk + 1024 + 64 * q);
    }
    __m512i d_dmin() const { return _mm512_loadu_si512(blk + 1280); }
  };

  // Scale byte s holds sc_s (low nibble) and mn_s (high). Scale bytes u and u + 2 of dword q
  // (g4[q]: sub-blocks 4q + u and 4q + u + 2) as int16 pairs at 2q + u: nibble `shift / 4` of
  // each (0: the scales, 4: the mins), ready for vpdpwssd.
  static void nibble_pairs(const __m512i g4[4], int shift, __m512i out[8]) {
    for (int q = 0; q < 4; ++q) {
      for (int u = 0; u < 2; ++u) {
        out[2 * q + u] = _mm512_and_si512(_mm512_srli_epi32(g4[q], static_cast<unsigned>(8 * u + shift)), _mm512_set1_epi32(0x000f000f));
      }
    }
  }
  // The scale dwords (g4, read once for the caller's scales), the mins pairs and d, dmin.
  template <typename Source>
  static void head(const Source& src, __m512i g4[4], __m512i mins[8], __m512* d, __m512* dmin) {
    src.scales(g4);
    nibble_pairs(g4, 4, mins);
    const __m512i dd = src.d_dmin();
    *d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dd));
    *dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
  }

  template <typename Source>
  static void unpack(const Source& src, Packed* out) {
    for_each_quant<false>(src, [&](int s, int t, __m512i q) { _mm512_store_si512(&out->q[4 * s + t], q); });
    __m512i g4[4];
    head(src, g4, out->mins, &out->d, &out->dmin);
    for (int q = 0; q < 4; ++q) {  // sc_s per lane for step's vpmulld
      for (int k = 0; k < 4; ++k) out->sc[4 * q + k] = _mm512_and_si512(_mm512_srli_epi32(g4[q], 8 * k), _mm512_set1_epi32(15));
    }
  }
  static void pack(const Panel& p, int64_t b, Packed* out) { unpack(RowsSource(p, b), out); }
  static void pack(const LayoutPanel& p, int64_t b, Packed* out) {
    const LayoutSource src(p, b);
    src.prefetch_all();
    unpack(src, out);
  }

  static __m512 finish(const Packed& p, const KActs& x, int64_t i, int64_t b, __m512i isum, __m512 acc) {
    return finish_with_mins<8>(p.mins, p.d, p.dmin, x, i, b, isum, acc);
  }

  template <int MR>
  static void layout_step(const LayoutPanel& panel, const KActs& x, int64_t b, __m512 (&acc)[MR][1]);
};

struct FormatQ3 : OffsetChains<-4> {
  // AMX (kquant_panel.h): q - 4 in -4..3 times the digits of sc - 32 in -32..31, base 8 (low digit
  // 0..7, top -4..3): at most 28.
  static constexpr int kAmxDigits = 2;
  static constexpr int kAmxDigitBits = 3;
  using Packed = PackedQ3;
  static constexpr int kSubs = 16;
  static constexpr int kGroups = 4;
  static constexpr int64_t kBlockBytes = sizeof(BlockQ3_K);
  static constexpr bool kRowDecode = false;

  struct RowsSource : QsRows<32, kBlockBytes> {
    using QsRows::QsRows;
    void hmask(__m512i out[8]) const { transpose_32(p, off, out); }
    // Gathers keep every read inside the 110-byte block (a 16-byte transpose would not).
    void scales(__m512i out[3]) const {
      for (int q = 0; q < 3; ++q) out[q] = gather_dword(p, off + 96 + 4 * q);
    }
    __m512 d() const {  // the dword at 106: scale bytes 10, 11, then d
      return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(gather_dword(p, off + 106), 16)));
    }
  };
  struct LayoutSource : LayoutBlock<kBlockBytes> {
    using LayoutBlock::LayoutBlock;
    __m512i qs(int g) const { return _mm512_loadu_si512(blk + 64 * g); }
    void hmask(__m512i out[8]) const {
      for (int t = 0; t < 8; ++t) out[t] = _mm512_loadu_si512(blk + 1024 + 64 * t);
    }
    void scales(__m512i out[3]) const {
      for (int q = 0; q < 3; ++q) out[q] = _mm512_loadu_si512(blk + 1536 + 64 * q);
    }
    __m512 d() const { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 1728))); }
  };

  // The 12 scale bytes per lane (a[0..2]) to the 16 biased 6-bit scales, byte k of six[q] being
  // sc_4q+k: blocks.h's packing on dwords, as ggml unpacks it (low nibbles of bytes 0..7 then
  // their high nibbles, two high bits each from bytes 8..11).
  template <typename Source>
  static void six_bits(const Source& src, __m512i six[4]) {
    __m512i a[3];
    src.scales(a);
    const __m512i m4 = _mm512_set1_epi32(0x0f0f0f0f), m2 = _mm512_set1_epi32(0x03030303);
    for (int q = 0; q < 4; ++q) {  // six[q]: scales 4q .. 4q + 3 (biased), one byte each
      const __m512i low = _mm512_and_si512(q < 2 ? a[q] : _mm512_srli_epi32(a[q - 2], 4), m4);
      const __m512i top = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(a[2], 2 * q), m2), 4);
      six[q] = _mm512_or_si512(low, top);
    }
  }
  // sc_s - 32 per lane (int32), for the pack.
  template <typename Source>
  static void head(const Source& src, __m512i sc[16]) {
    __m512i six[4];
    six_bits(src, six);
    const __m512i m6 = _mm512_set1_epi32(63), bias = _mm512_set1_epi32(32);
    for (int q = 0; q < 4; ++q) {
      for (int k = 0; k < 4; ++k) {
        sc[4 * q + k] = _mm512_sub_epi32(_mm512_and_si512(_mm512_srli_epi32(six[q], 8 * k), m6), bias);
      }
    }
  }
  // For the fused decode, as FormatQ2's scale pairs: (sc_4q+u - 32, sc_4q+u+2 - 32) as int16 pairs
  // at 2q + u.
  template <typename Source>
  static void scale_pairs(const Source& src, __m512i scp[8]) {
    __m512i six[4];
    six_bits(src, six);
    for (int q = 0; q < 4; ++q) {
      for (int u = 0; u < 2; ++u) {
        scp[2 * q + u] = _mm512_sub_epi16(_mm512_and_si512(_mm512_srli_epi32(six[q], 8 * u), _mm512_set1_epi32(0x003f003f)),
                                          _mm512_set1_epi16(32));
      }
    }
  }

  template <typename Source>
  static void unpack(const Source& src, Packed* out) {
    for_each_quant<true>(src, [&](int s, int t, __m512i q) { _mm512_store_si512(&out->q[4 * s + t], q); });
    head(src, out->sc);
    out->d = src.d();
  }
  static void pack(const Panel& p, int64_t b, Packed* out) { unpack(RowsSource(p, b), out); }
  static void pack(const LayoutPanel& p, int64_t b, Packed* out) {
    const LayoutSource src(p, b);
    src.prefetch_all();
    unpack(src, out);
  }

  static __m512 finish(const Packed& p, const KActs& x, int64_t i, int64_t b, __m512i isum, __m512 acc) {
    return float_step(p.d, x.d[i * x.nb + b], isum, acc);
  }

  template <int MR>
  static void layout_step(const LayoutPanel& panel, const KActs& x, int64_t b, __m512 (&acc)[MR][1]);
};

// Decode (m <= kDirectRows) of a kPanels16 super-block without the Packed round trip through L1
// (as Q4_K's): each qs register is split into its four sub-blocks' quants in registers and fed to
// vpdpbusd at once. Sub-block s's chain starts from F::part_init and is multiplied by sc_s (two
// sub-blocks per vpdpwssd, below): step's integer totals summed in another order, then the same
// finish.
template <typename F, bool kHigh, int MR, typename Source>
inline void fused_totals(const Source& src, const KActs& x, int64_t b, const __m512i scp[8],
                         __m512i (&tot)[MR]) {
  __m512i hm[8] = {};
  if constexpr (kHigh) src.hmask(hm);
  const int8_t* xb = x.q + kSuperBlock * b;
  RIDGE_UNROLL
  for (int h = 0; h < 2; ++h) {
    RIDGE_UNROLL
    for (int u = 0; u < 2; ++u) {  // groups t = 4u .. 4u + 3: sub-blocks 8 h + 2 j + u, j < 4
      src.prefetch_quarter(2 * h + u);
      __m512i part[MR][4];
      for (int i = 0; i < MR; ++i) {
        for (int j = 0; j < 4; ++j) part[i][j] = F::part_init(x, i, b, 8 * h + 2 * j + u);
      }
      RIDGE_UNROLL
      for (int t = 4 * u; t < 4 * u + 4; ++t) {
        const __m512i qs = src.qs(8 * h + t);
        for (int j = 0; j < 4; ++j) {
          const __m512i q = kHigh ? quant_of<kHigh>(qs, hm[t], h, j) : in_place2(qs, j);
          for (int i = 0; i < MR; ++i) part[i][j] = dpbusd_bcst(part[i][j], q, xb + i * x.cols + 128 * h + 32 * j + 4 * t);
        }
      }
      // Sub-blocks 8h + 4k + u and 8h + 4k + 2 + u (j = 2k, 2k + 1) share a vpdpwssd: their
      // partials fit int16 (|.| <= 16 * 4 * 127), as int16 pairs against the scale pair. Without
      // kHigh, chain j holds 4^j times its partial (in_place2), divided out by exact shifts.
      for (int i = 0; i < MR; ++i) {
        for (int k = 0; k < 2; ++k) {
          __m512i lo = part[i][2 * k], hi = part[i][2 * k + 1];
          if constexpr (kHigh) {
            hi = _mm512_slli_epi32(hi, 16);
          } else {
            if (k == 1) lo = _mm512_srai_epi32(lo, 4);  // 16 v
            hi = _mm512_slli_epi32(hi, k == 0 ? 14 : 10);  // 4 v or 64 v, to v << 16
          }
          const __m512i pair = _mm512_mask_blend_epi16(0xAAAAAAAA, lo, hi);
          tot[i] = _mm512_dpwssd_epi32(tot[i], pair, scp[2 * (2 * h + k) + u]);
        }
      }
    }
  }
}

template <int MR>
RIDGE_STEP_INLINE inline void FormatQ2::layout_step(const LayoutPanel& panel, const KActs& x, int64_t b, __m512 (&acc)[MR][1]) {
  const LayoutSource src(panel, b);
  __m512i g4[4], mins[8], scp[8];
  __m512 d, dmin;
  head(src, g4, mins, &d, &dmin);
  nibble_pairs(g4, 0, scp);
  __m512i tot[MR];
  for (int i = 0; i < MR; ++i) tot[i] = _mm512_setzero_si512();
  fused_totals<FormatQ2, false>(src, x, b, scp, tot);
  for (int i = 0; i < MR; ++i) acc[i][0] = finish_with_mins<8>(mins, d, dmin, x, i, b, tot[i], acc[i][0]);
}

template <int MR>
RIDGE_STEP_INLINE inline void FormatQ3::layout_step(const LayoutPanel& panel, const KActs& x, int64_t b, __m512 (&acc)[MR][1]) {
  const LayoutSource src(panel, b);
  __m512i scp[8];
  scale_pairs(src, scp);
  __m512i tot[MR];
  for (int i = 0; i < MR; ++i) tot[i] = _mm512_setzero_si512();
  fused_totals<FormatQ3, true>(src, x, b, scp, tot);
  const __m512 d = src.d();
  for (int i = 0; i < MR; ++i) acc[i][0] = float_step(d, x.d[i * x.nb + b], tot[i], acc[i][0]);
}

}  // namespace
}  // namespace ridge::kernels::kquant_avx512

namespace ridge::kernels::quant_avx512 {

void rows_q2_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  kquant_avx512::rows_k<kquant_avx512::FormatQ2>(w, a, j0, j1, y, ldy);
}

void rows_q3_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  kquant_avx512::rows_k<kquant_avx512::FormatQ3>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::quant_avx512
