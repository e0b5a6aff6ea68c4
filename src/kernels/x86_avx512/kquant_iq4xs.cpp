// AVX-512 VNNI matmul for IQ4_XS weights with Q8_K activations: the panel GEMM of kquant_panel.h
// with this format's unpacking, bit-identical to quant_ref::rows_iq4_xs.
//
// Super-block (blocks.h): fp16 d, 6-bit scales ls_ib (low 4 bits in scales_l, high 2 in
// scales_h), then per sub-block ib of 32 the 16 qs bytes of IQ4_NL (element j < 16 the low nibble
// of byte j, j + 16 the high one); element = d * (ls_ib - 32) * kIq4NlValues[nibble]. The panel
// reads it as 16 sub-blocks of 16 (kSubs), each of 4 groups of 4: the table values shifted to
// unsigned (+128, one vpshufb per 16 bytes), each sub-block's vpdpbusd chain starting from
// -128 bsum_s (OffsetChains), times ls - 32 of its half. isum = sum_ib (ls_ib - 32) * dot_ib is
// exact; the float step is the K formats' (acc = fma(float(isum), d * dx, acc)). The engine
// converts the weights to kPanels16 at load (weight_layout.h), which decode reads as plain loads
// (layout_step); a kRows matrix is transposed one super-block of a panel at a time.
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

// One super-block of a panel, unpacked (5.1 KB).
struct alignas(64) PackedIq4Xs {
  __m512i q[64];   // q[4 s + t] lane r: values 16 s + 4 t .. + 3 of row r, + 128 (unsigned bytes)
  __m512i sc[16];  // ls - 32 of sub-block s's half per lane (int32)
  __m512 d;
};

struct FormatIq4Xs : OffsetChains<-kIq4NlOffset> {
  // AMX (kquant_panel.h): the signed table values (-127..113) times the digits of ls - 32 in
  // -32..31, base 4 (low digits 0..3, top -2..1).
  static constexpr int kAmxDigits = 3;
  static constexpr int kAmxDigitBits = 2;
  using Packed = PackedIq4Xs;
  static constexpr int kSubs = 16;
  static constexpr int kGroups = 4;
  static constexpr int64_t kBlockBytes = sizeof(BlockIq4Xs);
  static constexpr int64_t kQsAt = 8;
  // A kRows matrix (a mapped file) decodes by packing each super-block of a panel through the
  // transposes below; the engine's kPanels16 copy (weight_layout.h) takes layout_step, no
  // transposes.
  static constexpr bool kRowDecode = false;

  // Super-block b of a panel's 16 kRows rows: the fields transposed to one row per lane.
  struct RowsSource {
    const Panel& p;
    int64_t off;
    RowsSource(const Panel& panel, int64_t b) : p(panel), off(b * kBlockBytes) {
      prefetch_next(p, off, kBlockBytes);
    }
    // out[t] lane r: qs dword 8 h + t of row r (bytes 32 h + 4 t .. + 3), h < 4.
    void quants(int h, __m512i out[8]) const { transpose_32(p, off + kQsAt + 32 * h, out); }
    __m512i head() const { return gather_dword(p, off); }          // d | scales_h << 16
    __m512i scales_l() const { return gather_dword(p, off + 4); }  // the 4 scales_l bytes
  };
  // The same registers loaded from a kPanels16 super-block (weight_layout.h): the 32 qs dword
  // registers, then scales_l and d | scales_h.
  struct LayoutSource : LayoutBlock<kBlockBytes> {
    using LayoutBlock::LayoutBlock;
    __m512i qs_at(int g) const { return _mm512_loadu_si512(blk + 64 * g); }
    void quants(int h, __m512i out[8]) const {
      for (int t = 0; t < 8; ++t) out[t] = qs_at(8 * h + t);
    }
    __m512i head() const { return _mm512_loadu_si512(blk + 2112); }
    __m512i scales_l() const { return _mm512_loadu_si512(blk + 2048); }
  };

  static void pack(const Panel& p, int64_t b, Packed* out) { unpack(RowsSource(p, b), out); }
  static void pack(const LayoutPanel& p, int64_t b, Packed* out) {
    const LayoutSource src(p, b);
    src.prefetch_all();
    unpack(src, out);
  }

  static __m512i table_u() {
    const auto* table = reinterpret_cast<const __m128i*>(kIq4NlValuesU.data());
    return _mm512_broadcast_i32x4(_mm_load_si128(table));
  }
  // A qs register's low nibbles (lo) and high nibbles (hi) as table values + 128.
  static void lookup(__m512i q, __m512i table, __m512i* lo, __m512i* hi) {
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    *lo = _mm512_shuffle_epi8(table, _mm512_and_si512(q, low4));
    *hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(q, 4), low4));
  }

  // ls - 32 of each sub-block of 32 (int32 lanes) from the scales_l dwords (low) and the head
  // (scales_h in its top 16 bits); d from the head's low 16.
  static void unpack_scales(__m512i low, __m512i head, __m512i sc[8]) {
    const __m512i high = _mm512_srli_epi32(head, 16);
    for (int ib = 0; ib < 8; ++ib) {
      const __m512i lo4 = _mm512_and_si512(_mm512_srli_epi32(low, 4 * ib), _mm512_set1_epi32(15));
      const __m512i hi2 = _mm512_and_si512(_mm512_srli_epi32(high, 2 * ib), _mm512_set1_epi32(3));
      const __m512i ls = _mm512_or_si512(lo4, _mm512_slli_epi32(hi2, 4));
      sc[ib] = _mm512_sub_epi32(ls, _mm512_set1_epi32(32));
    }
  }
  static __m512 unpack_d(__m512i head) {
    const __m512i d16 = _mm512_and_si512(head, _mm512_set1_epi32(0xffff));
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d16));
  }

  template <typename Source>
  static void unpack(const Source& src, Packed* out) {
    const __m512i table = table_u();
    for (int h = 0; h < 4; ++h) {  // sub-blocks of 32: 2 h and 2 h + 1
      __m512i qs[8];
      src.quants(h, qs);
      for (int t = 0; t < 8; ++t) {
        const int ib = 2 * h + t / 4, g = t % 4;
        lookup(qs[t], table, &out->q[4 * (2 * ib) + g], &out->q[4 * (2 * ib + 1) + g]);
      }
    }
    const __m512i head = src.head();
    __m512i sc[8];
    unpack_scales(src.scales_l(), head, sc);
    for (int ib = 0; ib < 8; ++ib) out->sc[2 * ib] = out->sc[2 * ib + 1] = sc[ib];
    out->d = unpack_d(head);
  }

  static __m512 finish(const Packed& p, const KActs& x, int64_t i, int64_t b, __m512i isum, __m512 acc) {
    return float_step(p.d, x.d[i * x.nb + b], isum, acc);
  }

  // Decode (m <= kDirectRows) of a kPanels16 super-block without the Packed round trip through
  // L1 (as Q4_K's): each qs register's two lookups go to vpdpbusd at once, sub-block 2 ib (low
  // nibbles) and 2 ib + 1 (high) in chains from part_init as in step. Both halves share
  // ls_ib - 32, so their chains are added before the one vpmulld: the same integer total as
  // step's (exact int32), then the same float step: the same bits.
  template <int MR>
  RIDGE_STEP_INLINE static void layout_step(const LayoutPanel& panel, const KActs& x, int64_t b, __m512 (&acc)[MR][1]) {
    const LayoutSource src(panel, b);
    const __m512i head = src.head();
    __m512i sc[8];
    unpack_scales(src.scales_l(), head, sc);
    const __m512i table = table_u();
    const int8_t* xb = x.q + kSuperBlock * b;
    __m512i tot[MR];
    for (int i = 0; i < MR; ++i) tot[i] = _mm512_setzero_si512();
    RIDGE_UNROLL
    for (int ib = 0; ib < 8; ++ib) {  // qs dwords 4 ib .. 4 ib + 3: elements 32 ib ..
      if (ib % 2 == 0) src.prefetch_quarter(ib / 2);
      __m512i lo_sum[MR], hi_sum[MR];
      for (int i = 0; i < MR; ++i) {
        lo_sum[i] = part_init(x, i, b, 2 * ib);
        hi_sum[i] = part_init(x, i, b, 2 * ib + 1);
      }
      RIDGE_UNROLL
      for (int t = 0; t < 4; ++t) {
        __m512i lo, hi;
        lookup(src.qs_at(4 * ib + t), table, &lo, &hi);
        RIDGE_UNROLL
        for (int i = 0; i < MR; ++i) {
          const int8_t* xs = xb + i * x.cols + 32 * ib + 4 * t;
          lo_sum[i] = dpbusd_bcst(lo_sum[i], lo, xs);
          hi_sum[i] = dpbusd_bcst(hi_sum[i], hi, xs + 16);
        }
      }
      RIDGE_UNROLL
      for (int i = 0; i < MR; ++i) {
        const __m512i dot = _mm512_add_epi32(lo_sum[i], hi_sum[i]);
        tot[i] = _mm512_add_epi32(tot[i], _mm512_mullo_epi32(dot, sc[ib]));
      }
    }
    const __m512 d = unpack_d(head);
    for (int i = 0; i < MR; ++i) acc[i][0] = float_step(d, x.d[i * x.nb + b], tot[i], acc[i][0]);
  }
};

}  // namespace
}  // namespace ridge::kernels::kquant_avx512

namespace ridge::kernels::quant_avx512 {

void rows_iq4_xs(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  kquant_avx512::rows_k<kquant_avx512::FormatIq4Xs>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::quant_avx512
