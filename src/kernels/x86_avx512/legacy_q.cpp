// AVX-512 VNNI matmul for the legacy 32-element formats Q4_0, Q4_1, Q5_0, Q5_1 and for MXFP4:
// their block loaders for the shared panel kernel (panel_q8.h: layout, f32 accumulation, decode / prefill).
//
// Per block, ggml's rule (what llama.cpp's x86 dot products compute, up to f32 summation order):
//   Q4_0 / Q5_0: d_w d_x * sum (q - 8 | q - 16) x            (Q8_0 activations)
//   Q4_1 / Q5_1: d_w d_x * sum q x + m_w s_x, s_x ggml's Q8_1 block term (Q8_1 activations)
// The loaders give the unsigned quants q (0..15, or 0..31 with bit 4 from qh); the kernel starts
// the integer sum at -8 (-16) * sum(x_b) for the symmetric formats (kOffset), so isum_b is the
// exact signed dot, then adds fma(isum, d_w d_x) and, with a min, fma(m_w, s_x) per lane.
//   MXFP4: acc + (d_w d_x) * isum with ggml's table values (see Mxfp4Format).
//
// GCC 12's _mm512_undefined_*() self-initializes a local, which -Wuninitialized reports when
// intrinsics such as _mm512_cvtph_ps are inlined at -O3 (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/quant/blocks.h"
#include "kernels/x86_avx512/avx512.h"
#include "kernels/x86_avx512/panel_q8.h"
#include "kernels/x86_avx512/quant_simd.h"

namespace ridge::kernels::avx512 {
namespace {

// The 16 bytes at `at` of each row's block, transposed: t[k] lane r = dword k (bytes 4k..4k+3)
// of row r.
RIDGE_PANEL_INLINE void transpose_qs(const uint8_t* const* row, int64_t at, __m512i t[4]) {
  // z[q], 128-bit lane L = the 16 bytes (4 dwords) of row q + 4L.
  __m512i z[4];
  for (int q = 0; q < 4; ++q) {
    z[q] = quant_avx512::load_4x128(row[q] + at, row[q + 4] + at, row[q + 8] + at, row[q + 12] + at);
  }
  // 4 x 4 dword transpose in each 128-bit lane.
  const __m512i a0 = _mm512_unpacklo_epi32(z[0], z[1]);
  const __m512i a1 = _mm512_unpackhi_epi32(z[0], z[1]);
  const __m512i a2 = _mm512_unpacklo_epi32(z[2], z[3]);
  const __m512i a3 = _mm512_unpackhi_epi32(z[2], z[3]);
  t[0] = _mm512_unpacklo_epi64(a0, a2);
  t[1] = _mm512_unpackhi_epi64(a0, a2);
  t[2] = _mm512_unpacklo_epi64(a1, a3);
  t[3] = _mm512_unpackhi_epi64(a1, a3);
}

// A kPanels16 block's transposed qs (t[k] at 64 k, as transpose_qs gives them).
RIDGE_PANEL_INLINE void layout_qs(const uint8_t* p, __m512i t[4]) {
  for (int k = 0; k < 4; ++k) t[k] = _mm512_loadu_si512(p + 64 * k);
}

// The 4-bit table formats' quants: each nibble of the transposed qs looked up (vpshufb) in
// `table` (16 bytes: the values shifted to unsigned), low nibbles into w[0..3], high into w[4..7].
RIDGE_PANEL_INLINE void table_quants(const __m512i t[4], const uint8_t* table, PanelBlock<false>* out) {
  const __m512i lut = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(table)));
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  for (int k = 0; k < 4; ++k) {
    out->w[k] = _mm512_shuffle_epi8(lut, _mm512_and_si512(t[k], low4));
    out->w[k + 4] = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(t[k], 4), low4));
  }
}

// Block layouts (kernels/quant/blocks.h): d at 0; m at 2 (formats with a min); qh (5-bit formats)
// at kQh; the 16 qs bytes at kQs, element j < 16 in the low nibble of qs[j], j + 16 in the high.
template <int64_t kBytes, int64_t kQsAt, int64_t kQhAt, bool kHasMin>
struct LegacyFormat {
  static constexpr int64_t kBlockBytes = kBytes;
  static constexpr bool kFive = kQhAt >= 0;
  static constexpr bool kMin = kHasMin;
  static constexpr int32_t kOffset = kHasMin ? 0 : (kFive ? 16 : 8);
  static constexpr int64_t kPrefetchEvery = 64 / kBytes;
  static constexpr int64_t kL2PrefetchStride = 64;  // every line (see Q8_0Format)
  // 8 KiB ahead (docs/tuning.md, "L2 prefetch distances").
  static constexpr int64_t kL2PrefetchBytes = 8192;

  RIDGE_PANEL_INLINE static void load(const uint8_t* const* row, int64_t off,
                                      PanelBlock<kMin>* out) {
    __m512i t[4];
    transpose_qs(row, off + kQsAt, t);
    const __m512i qh = kFive ? load_dwords(row, off + kQhAt) : _mm512_setzero_si512();
    if constexpr (kMin) {  // d and m are the two halves of the block's first dword
      finish(t, qh, load_dwords(row, off), out);
    } else {
      finish(t, qh, _mm512_setzero_si512(), out);
      out->d = load_halves(row, off);
    }
  }

  // kPanels16 (weight_layout.h): t[0..3], then qh (5-bit formats), then d | m << 16 per lane
  // (formats with a min) or the 16 fp16 d.
  static constexpr int64_t kLayoutQh = 256;
  static constexpr int64_t kLayoutScales = kFive ? 320 : 256;
  RIDGE_PANEL_INLINE static void load_layout(const uint8_t* p, PanelBlock<kMin>* out) {
    __m512i t[4];
    layout_qs(p, t);
    const __m512i qh = kFive ? _mm512_loadu_si512(p + kLayoutQh) : _mm512_setzero_si512();
    if constexpr (kMin) {
      finish(t, qh, _mm512_loadu_si512(p + kLayoutScales), out);
    } else {
      finish(t, qh, _mm512_setzero_si512(), out);
      out->d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kLayoutScales)));
    }
  }

  // The block from its transposed fields: quants (with qh's bit 4) and, with a min, d and m
  // from dm = d | m << 16 per lane (without, the caller sets d).
  RIDGE_PANEL_INLINE static void finish(const __m512i t[4], __m512i qh, __m512i dm,
                                        PanelBlock<kMin>* out) {
    // Elements 4k..4k+3 are the low nibbles of qs 4k..4k+3, elements 16 + 4k.. the high ones.
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int k = 0; k < 4; ++k) {
      out->w[k] = _mm512_and_si512(t[k], low4);
      out->w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(t[k], 4), low4);
    }
    if constexpr (kFive) add_high_bits(qh, out);
    if constexpr (kMin) {
      out->d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm));
      out->m = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16)));
    } else {
      (void)dm;
    }
  }

  // qh: lane r = the 32-bit qh of row r. Bit 4 of element e is bit e of the row's qh: for group g (elements 4g..4g+3), byte
  // g / 2 of qh is spread over the lane's 4 bytes (vpshufb) and byte t tests bit 4 (g % 2) + t.
  RIDGE_PANEL_INLINE static void add_high_bits(__m512i qh, PanelBlock<kMin>* out) {
    const __m512i lane_base = _mm512_set4_epi32(0x0c0c0c0c, 0x08080808, 0x04040404, 0);
    const __m512i bit4 = _mm512_set1_epi8(0x10);
    const __m512i sel[2] = {_mm512_set1_epi32(0x08040201), _mm512_set1_epi32(static_cast<int32_t>(0x80402010u))};
    for (int h = 0; h < 4; ++h) {
      const __m512i spread =
          _mm512_shuffle_epi8(qh, _mm512_add_epi8(lane_base, _mm512_set1_epi8(static_cast<char>(h))));
      for (int p = 0; p < 2; ++p) {
        const int g = 2 * h + p;
        const __mmask64 k = _mm512_test_epi8_mask(spread, sel[p]);
        out->w[g] = _mm512_mask_add_epi8(out->w[g], k, out->w[g], bit4);
      }
    }
  }
};

// MXFP4 (17 bytes: the exponent e, then 16 qs bytes with element j < 16 in the low nibble of
// qs[j], j + 16 in the high; blocks.h): the nibble q is looked up (vpshufb) in ggml's doubled
// E2M1 table shifted to unsigned, u = kMxfp4Values[q] + 12, so the integer sum started at
// -12 * sum(x_b) ends at the exact dot; the scale is the halved 2^(e - 128). The f32 step rounds
// the product before the add, as ggml (and quant_ref::rows_mxfp4, which this matches bit for
// bit) computes it.
struct Mxfp4Format {
  static constexpr int64_t kBlockBytes = 17;
  static constexpr bool kMin = false;
  static constexpr bool kRoundedStep = true;
  static constexpr int32_t kOffset = kMxfp4Offset;
  static constexpr int64_t kPrefetchEvery = 64 / kBlockBytes;
  static constexpr int64_t kL2PrefetchStride = 64;
  static constexpr int64_t kL2PrefetchBytes = 8192;

  RIDGE_PANEL_INLINE static void load(const uint8_t* const* row, int64_t off, PanelBlock<false>* out) {
    __m512i t[4];
    transpose_qs(row, off + 1, t);
    uint64_t q[4];  // (e, qs[0]) of each row; e is the low byte
    gather_halves(row, off, q);
    const __m256i eq = _mm256_set_epi64x(static_cast<long long>(q[3]), static_cast<long long>(q[2]),
                                         static_cast<long long>(q[1]), static_cast<long long>(q[0]));
    finish(t, _mm512_and_si512(_mm512_cvtepu16_epi32(eq), _mm512_set1_epi32(0xff)), out);
  }

  // kPanels16 (weight_layout.h): t[0..3], then the 16 exponent bytes at 256.
  static constexpr int64_t kLayoutExponents = 256;
  RIDGE_PANEL_INLINE static void load_layout(const uint8_t* p, PanelBlock<false>* out) {
    __m512i t[4];
    layout_qs(p, t);
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kLayoutExponents));
    finish(t, _mm512_cvtepu8_epi32(e), out);
  }

  // The block from its transposed qs and the 16 exponents (one per 32-bit lane).
  RIDGE_PANEL_INLINE static void finish(const __m512i t[4], __m512i e, PanelBlock<false>* out) {
    table_quants(t, kMxfp4ValuesU.data(), out);
    // 2^(e - 128) as f32 bits: (e - 1) << 23 for e >= 2, the subnormal 2^21 << e below.
    const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    const __m512i subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
    const __mmask16 small = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
    out->d = _mm512_castsi512_ps(_mm512_mask_blend_epi32(small, normal, subnormal));
  }
};

// IQ4_NL (18 bytes: fp16 d, then Q4_0's 16 qs bytes; blocks.h): the nibble is looked up
// (vpshufb) in the non-linear table shifted to unsigned, u = kIq4NlValues[q] + 128, so the
// integer sum started at -128 * sum(x_b) ends at the exact dot; the f32 step rounds the product
// before the add, as ggml (and quant_ref::rows_iq4_nl, which this matches bit for bit).
struct Iq4NlFormat {
  static constexpr int64_t kBlockBytes = 18;
  static constexpr bool kMin = false;
  static constexpr bool kRoundedStep = true;
  static constexpr int32_t kOffset = kIq4NlOffset;
  static constexpr int64_t kPrefetchEvery = 64 / kBlockBytes;
  static constexpr int64_t kL2PrefetchStride = 64;
  static constexpr int64_t kL2PrefetchBytes = 8192;

  RIDGE_PANEL_INLINE static void load(const uint8_t* const* row, int64_t off, PanelBlock<false>* out) {
    __m512i t[4];
    transpose_qs(row, off + 2, t);
    table_quants(t, kIq4NlValuesU.data(), out);
    out->d = load_halves(row, off);
  }

  // kPanels16 (weight_layout.h, Q4_0's): t[0..3], then the 16 fp16 d at 256.
  RIDGE_PANEL_INLINE static void load_layout(const uint8_t* p, PanelBlock<false>* out) {
    __m512i t[4];
    layout_qs(p, t);
    table_quants(t, kIq4NlValuesU.data(), out);
    out->d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 256)));
  }
};

using Q4_0Format = LegacyFormat<18, 2, -1, false>;
using Q4_1Format = LegacyFormat<20, 4, -1, true>;
using Q5_0Format = LegacyFormat<22, 6, 2, false>;
using Q5_1Format = LegacyFormat<24, 8, 4, true>;

}  // namespace

void rows_q4_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  panel_matmul_rows<Q4_0Format>(w, a, j0, j1, y, ldy);
}
void rows_q4_1(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  panel_matmul_rows<Q4_1Format>(w, a, j0, j1, y, ldy);
}
void rows_q5_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  panel_matmul_rows<Q5_0Format>(w, a, j0, j1, y, ldy);
}
void rows_q5_1(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  panel_matmul_rows<Q5_1Format>(w, a, j0, j1, y, ldy);
}
void rows_mxfp4(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  panel_matmul_rows<Mxfp4Format>(w, a, j0, j1, y, ldy);
}
void rows_iq4_nl(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  panel_matmul_rows<Iq4NlFormat>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::avx512
