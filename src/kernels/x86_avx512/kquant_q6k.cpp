// AVX-512 VNNI matmul for Q6_K weights with Q8_K activations: the panel GEMM of kquant_panel.h
// with this format's unpacking.
//
// Super-block (blocks.h): 16 sub-blocks of 16, element e = d * sc_(e/16) * (q - 32), q in
// [0, 63]; e = 128 h + 32 k + l takes its low 4 bits from ql[64 h + 32 (k & 1) + l] (high nibble
// when k >= 2) and its top 2 from bits 2k, 2k + 1 of qh[32 h + l]. Per row and x row the integer
// total is isum = sum_s sc_s * (dot(q_s, x_s) - 32 bsum_s): each sub-block's vpdpbusd chain
// starts from -32 bsum_s (prepared once per call), then is multiplied by the lane's sc_s. The
// canonical float step (every path, every lane): acc = fma(float(isum), d * dx, acc).
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
struct alignas(64) PackedQ6 {
  __m512i q[64];  // q[4 s + t] lane r: quants 16 s + 4 t .. + 3 of row r (unsigned bytes)
  __m512i sc[16];  // sc_s per lane (int32, signed)
  __m512 d;
};

struct FormatQ6 : OffsetChains<-32> {
  // AMX (kquant_panel.h): q - 32 in -32..31 times the digits of sc in -128..127, base 4 (low digits
  // 0..3, top -2..1): at most 96.
  static constexpr int kAmxDigits = 4;
  static constexpr int kAmxDigitBits = 2;
  using Packed = PackedQ6;
  static constexpr int kSubs = 16;
  static constexpr int kGroups = 4;
  static constexpr int64_t kBlockBytes = sizeof(BlockQ6_K);

  // Super-block b of a panel's 16 kRows rows: the fields transposed to one row per lane.
  struct RowsSource {
    const Panel& p;
    int64_t off;
    RowsSource(const Panel& panel, int64_t b) : p(panel), off(b * kBlockBytes) {
      prefetch_next(p, off, kBlockBytes);
    }
    // out[t] lane r = ql dword 16 h + 8 half + t of row r; qh dword 8 h + t; scale dword g.
    void ql(int h, int half, __m512i out[8]) const { transpose_32(p, off + 64 * h + 32 * half, out); }
    void qh(int h, __m512i out[8]) const { transpose_32(p, off + 128 + 32 * h, out); }
    void scales(__m512i out[4]) const { transpose_16(p, off + 192, out); }
    // d at 208: the dword at 206 keeps the gather inside the block (scales 14, 15, d).
    __m512 d() const {
      return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(gather_dword(p, off + 206), 16)));
    }
  };
  // The same registers loaded from a kPanels16 super-block (weight_layout.h).
  struct LayoutSource : LayoutBlock<kBlockBytes> {
    using LayoutBlock::LayoutBlock;
    __m512i ql_at(int g) const { return _mm512_loadu_si512(blk + 64 * g); }
    __m512i qh_at(int g) const { return _mm512_loadu_si512(blk + 2048 + 64 * g); }
    void ql(int h, int half, __m512i out[8]) const {
      for (int t = 0; t < 8; ++t) out[t] = ql_at(16 * h + 8 * half + t);
    }
    void qh(int h, __m512i out[8]) const {
      for (int t = 0; t < 8; ++t) out[t] = qh_at(8 * h + t);
    }
    void scales(__m512i out[4]) const {
      for (int g = 0; g < 4; ++g) out[g] = _mm512_loadu_si512(blk + 3072 + 64 * g);
    }
    __m512 d() const { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 3328))); }
  };

  static void pack(const Panel& p, int64_t b, Packed* out) { unpack(RowsSource(p, b), out); }
  static void pack(const LayoutPanel& p, int64_t b, Packed* out) {
    const LayoutSource src(p, b);
    src.prefetch_all();
    unpack(src, out);
  }

  // Quants 128 h + 32 k + 4 t .. + 3 of each lane's row (sub-block 8 h + 2 k + t / 4), from the ql
  // dwords of halves 0 and 1 (k & 1) and the qh dword that share t.
  static __m512i quant6(int k, __m512i ql0, __m512i ql1, __m512i qh) {
    const __m512i low4 = _mm512_set1_epi8(0x0f), top2 = _mm512_set1_epi8(0x30);
    const __m512i src = (k & 1) != 0 ? ql1 : ql0;
    const __m512i lo = _mm512_and_si512(k < 2 ? src : _mm512_srli_epi16(src, 4), low4);
    // bits 2k, 2k + 1 of qh to bits 4, 5 (16-bit shifts: each byte keeps its own bits)
    __m512i hi2 = qh;
    if (k == 0) hi2 = _mm512_slli_epi16(hi2, 4);
    if (k == 1) hi2 = _mm512_slli_epi16(hi2, 2);
    if (k == 3) hi2 = _mm512_srli_epi16(hi2, 2);
    return _mm512_or_si512(lo, _mm512_and_si512(hi2, top2));
  }

  // The 16 sign-extended int8 scales per lane from the 4 scale dwords.
  static void unpack_scales(const __m512i g4[4], __m512i sc[16]) {
    for (int g = 0; g < 4; ++g) {
      for (int j = 0; j < 4; ++j) sc[4 * g + j] = _mm512_srai_epi32(_mm512_slli_epi32(g4[g], 24 - 8 * j), 24);
    }
  }

  template <typename Source>
  static void unpack(const Source& src, Packed* out) {
    for (int h = 0; h < 2; ++h) {
      __m512i ql[2][8], qh[8];
      src.ql(h, 0, ql[0]);
      src.ql(h, 1, ql[1]);
      src.qh(h, qh);
      for (int k = 0; k < 4; ++k) {
        for (int t = 0; t < 8; ++t) {
          const int s = 8 * h + 2 * k + t / 4;
          _mm512_store_si512(&out->q[4 * s + t % 4], quant6(k, ql[0][t], ql[1][t], qh[t]));
        }
      }
    }
    __m512i g4[4];
    src.scales(g4);
    unpack_scales(g4, out->sc);
    out->d = src.d();
  }

  // Decode (m <= kDirectRows) of a kPanels16 super-block without the Packed round trip through
  // L1 (as Q4_K's): the quants are built in registers and fed to vpdpbusd at once. Each sub-block's
  // chain starts from part_init as in step, so the integer totals, and the float step, are step's.
  template <int MR>
  RIDGE_STEP_INLINE static void layout_step(const LayoutPanel& panel, const KActs& x, int64_t b, __m512 (&acc)[MR][1]) {
    const LayoutSource src(panel, b);
    __m512i g4[4], sc[16];
    src.scales(g4);
    unpack_scales(g4, sc);
    const int8_t* xb = x.q + kSuperBlock * b;
    __m512i tot[MR];
    for (int i = 0; i < MR; ++i) tot[i] = _mm512_setzero_si512();
    RIDGE_UNROLL
    for (int h = 0; h < 2; ++h) {
      RIDGE_UNROLL
      for (int u = 0; u < 2; ++u) {  // t = 4u .. 4u + 3: sub-blocks 8 h + 2 k + u, k < 4
        src.prefetch_quarter(2 * h + u);
        __m512i part[MR][4];
        RIDGE_UNROLL
        for (int i = 0; i < MR; ++i) {
          for (int k = 0; k < 4; ++k) part[i][k] = part_init(x, i, b, 8 * h + 2 * k + u);
        }
        RIDGE_UNROLL
        for (int t = 4 * u; t < 4 * u + 4; ++t) {
          const __m512i ql0 = src.ql_at(16 * h + t), ql1 = src.ql_at(16 * h + 8 + t), qh = src.qh_at(8 * h + t);
          RIDGE_UNROLL
          for (int k = 0; k < 4; ++k) {
            const __m512i q = quant6(k, ql0, ql1, qh);
            for (int i = 0; i < MR; ++i) part[i][k] = dpbusd_bcst(part[i][k], q, xb + i * x.cols + 128 * h + 32 * k + 4 * t);
          }
        }
        RIDGE_UNROLL
        for (int i = 0; i < MR; ++i) {
          for (int k = 0; k < 4; ++k) tot[i] = _mm512_add_epi32(tot[i], _mm512_mullo_epi32(part[i][k], sc[8 * h + 2 * k + u]));
        }
      }
    }
    const __m512 d = src.d();
    for (int i = 0; i < MR; ++i) acc[i][0] = float_step(d, x.d[i * x.nb + b], tot[i], acc[i][0]);
  }

  static __m512 finish(const Packed& p, const KActs& x, int64_t i, int64_t b, __m512i isum,
                       __m512 acc) {
    return float_step(p.d, x.d[i * x.nb + b], isum, acc);
  }

  // m = 1 over kRows by decode_streamed (kquant_panel.h): its transposing unpack costs more than
  // the stream. kPanels16 matrices take layout_step instead.
  static constexpr bool kRowDecode = true;
  struct alignas(64) RowLanes {
    int32_t isum[kPanel];
    uint16_t d[kPanel];
  };
  static void row_block(const uint8_t* blk, const int8_t* x, const int16_t* bsums, RowLanes* out,
                        int r);
  static __m512 lane_step(const RowLanes& l, float dx, __m512 acc) {
    const __m512 d = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(l.d)));
    return float_step(d, dx, _mm512_load_si512(l.isum), acc);
  }
  static void decode_rows(const WeightView& w, const Acts& a, const KActs& x, int64_t j0,
                          int64_t j1, float* y) {
    decode_streamed<FormatQ6>(w, a, x, x.q, j0, j1, y);
  }
};

// vpermw indices: 128-bit lane L of 64 quants [q0 | q1] (c = 2h) or [q2 | q3] (c = 2h + 1) is
// sub-block 4c + L.
alignas(64) constexpr int16_t kScaleSel[4][32] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
    {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7},
    {8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11},
    {12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13, 14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15}};

// Row r, super-block b against x (m = 1): 16 int32 lanes summing to isum, by the row layout
// (vpmaddubsw of 64 quants, vpdpwssd with their sub-block scales; the -32 offset through bsums).
inline __m512i row_isum(const BlockQ6_K& w, const int8_t* x, const int16_t* bsums) {
  const __m256i low4 = _mm256_set1_epi8(0x0f), hmask = _mm256_set1_epi8(0x30);
  const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales)));
  const __m256i off = _mm256_slli_epi32(
      _mm256_madd_epi16(sc16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums))), 5);
  __m512i sumi = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), off));
  __m512i sumi2 = _mm512_setzero_si512();
  const __m512i sc = _mm512_zextsi256_si512(sc16);
  for (int h = 0; h < 2; ++h) {
    const auto load = [](const uint8_t* q) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)); };
    const __m256i ql0 = load(w.ql + 64 * h), ql1 = load(w.ql + 64 * h + 32), qh = load(w.qh + 32 * h);
    const __m256i q0 = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), hmask));
    const __m256i q1 = _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), hmask));
    const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), _mm256_and_si256(qh, hmask));
    const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                       _mm256_and_si256(_mm256_srli_epi16(qh, 2), hmask));
    const __m512i scs[2] = {_mm512_permutexvar_epi16(_mm512_load_si512(kScaleSel[2 * h]), sc),
                            _mm512_permutexvar_epi16(_mm512_load_si512(kScaleSel[2 * h + 1]), sc)};
    const __m512i q01 = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
    const __m512i q23 = _mm512_inserti64x4(_mm512_castsi256_si512(q2), q3, 1);
    sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q01, _mm512_loadu_si512(x + 128 * h)), scs[0]);
    sumi2 = _mm512_dpwssd_epi32(sumi2, _mm512_maddubs_epi16(q23, _mm512_loadu_si512(x + 128 * h + 64)), scs[1]);
  }
  return _mm512_add_epi32(sumi, sumi2);
}

// Row r's super-block: its isum (row_isum's lanes added; grouping four blocks' reductions was
// 2x slower) and d.
void FormatQ6::row_block(const uint8_t* blk, const int8_t* x, const int16_t* bsums, RowLanes* out,
                         int r) {
  const auto& w = *reinterpret_cast<const BlockQ6_K*>(blk);
  out->isum[r] = quant_avx512::hsum_epi32(row_isum(w, x, bsums));
  out->d[r] = w.d;
}

}  // namespace
}  // namespace ridge::kernels::kquant_avx512

namespace ridge::kernels::quant_avx512 {

void rows_q6_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  kquant_avx512::rows_k<kquant_avx512::FormatQ6>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::quant_avx512
