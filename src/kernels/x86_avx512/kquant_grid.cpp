// AVX-512 VNNI matmul for the grid formats (kernels/quant/grid_formats.h: IQ1-IQ3, TQ1_0, TQ2_0)
// with Q8_K activations: the panel GEMM of kquant_panel.h, bit-identical to quant_ref::grid_rows.
//
// Packing a super-block of a 16-row panel: each row's block is unpacked 32 elements at a time in
// a register (x86_avx2/grid_chunks.h), stored as q + 64 (unsigned bytes 2..126) with its sub-block
// scales, and the 16 rows' bytes are transposed to one row per lane. Each sub-block's vpdpbusd
// chain starts from -64 bsum_s (OffsetChains), so isum = sum_s ls_s * dot(q_s, x_s) exactly; the
// float step is the reference's: acc = acc + ((d * kUnit) * dx) * float(isum), a rounded product
// then a rounded sum (no fma).
//
// GCC 12's avx512fintrin.h feeds an uninitialized pass-through operand to the unmasked forms of
// many intrinsics (GCC bug 105593); -Wmaybe-uninitialized then fires inside our functions.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <type_traits>

#include "kernels/quant/grid_formats.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/x86_avx2/grid_chunks.h"
#include "kernels/x86_avx512/kquant_panel.h"

namespace ridge::kernels::kquant_avx512 {
namespace {

constexpr int kGridOffset = 64;  // q + 64 > 0 for every grid format's q (|q| <= 62)

// One super-block of a panel, unpacked (5.1 KB).
struct alignas(64) PackedGrid {
  __m512i q[64];   // q[4 s + t] lane r: elements 16 s + 4 t .. + 3 of row r, + 64 (unsigned bytes)
  __m512i sc[16];  // ls_s per lane (int32)
  __m512 d;        // d * kUnit per lane
};

// The empty asm keeps the product apart from the following add (no fma contraction).
inline __m512 rounded512(__m512 v) {
  __asm__("" : "+v"(v));
  return v;
}

// m = 1 row by row (decode_streamed: each row's block unpacked in registers and dotted at once,
// no transposes) where that measured faster than packing panels: IQ2_XXS, IQ2_XS, IQ1_S, IQ1_M,
// TQ1_0 and TQ2_0 (+13% to +32% decode on the Qwen3-0.6B shape); IQ2_S, IQ3_XXS and IQ3_S, whose
// per-index high bits make each chunk a longer chain, decode faster with 16 rows interleaved in
// the panel (-8% to -20% row by row). docs/quantization.md has the figures.
template <typename G>
constexpr bool kRowsFaster = !std::is_same_v<G, Iq2S> && !std::is_same_v<G, Iq3Xxs> && !std::is_same_v<G, Iq3S>;

template <typename G>
struct FormatGrid : OffsetChains<-kGridOffset> {
  // AMX (kquant_panel.h): q in -62..62 times the digits of ls in 1..31, base 4 (top digit 0..1).
  static constexpr int kAmxDigits = 3;
  static constexpr int kAmxDigitBits = 2;
  using Packed = PackedGrid;
  static constexpr int kSubs = 16;
  static constexpr int kGroups = 4;
  static constexpr bool kRowDecode = kRowsFaster<G>;

  static void pack(const Panel& p, int64_t b, Packed* out) {
    using Block = typename G::Block;
    prefetch_next(p, b * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
    alignas(64) uint8_t bytes[kPanel][kSuperBlock];
    alignas(64) int32_t ls[16][kPanel];
    alignas(64) float d[kPanel];
    const __m256i offset = _mm256_set1_epi8(kGridOffset);
    for (int r = 0; r < kPanel; ++r) {
      const Block& blk = reinterpret_cast<const Block*>(p.row[r])[b];
      d[r] = G::scale(blk) * G::kUnit;
      for (int k = 0; k < kSuperBlock / 32; ++k) {
        const grid_simd::Chunk c = grid_simd::chunk<G>(blk, k);
        const __m256i q = _mm256_add_epi8(_mm256_sign_epi8(c.mag, c.sgn), offset);
        _mm256_store_si256(reinterpret_cast<__m256i*>(bytes[r] + 32 * k), q);
        ls[2 * k][r] = c.ls0;
        ls[2 * k + 1][r] = c.ls1;
      }
    }
    Panel unpacked;
    for (int r = 0; r < kPanel; ++r) unpacked.row[r] = bytes[r];
    for (int h = 0; h < kSuperBlock / 32; ++h) transpose_32(unpacked, 32 * h, out->q + 8 * h);
    for (int s = 0; s < 16; ++s) out->sc[s] = _mm512_load_si512(ls[s]);
    out->d = _mm512_load_ps(d);
  }

  static __m512 float_step(__m512 d, float dx, __m512i isum, __m512 acc) {
    const __m512 dd = rounded512(_mm512_mul_ps(d, _mm512_set1_ps(dx)));
    return _mm512_add_ps(acc, rounded512(_mm512_mul_ps(dd, _mm512_cvtepi32_ps(isum))));
  }
  static __m512 finish(const Packed& p, const KActs& x, int64_t i, int64_t b, __m512i isum, __m512 acc) {
    return float_step(p.d, x.d[i * x.nb + b], isum, acc);
  }
  static constexpr int64_t kBlockBytes = sizeof(typename G::Block);
  // Row r's super-block: its exact isum and d * kUnit, for lane_step's float step in lane r.
  struct alignas(64) RowLanes {
    int32_t isum[kPanel];
    float d[kPanel];
  };
  static void row_block(const uint8_t* blk, const int8_t* x, const int16_t* /*bsums*/, RowLanes* out, int r) {
    const auto& b = *reinterpret_cast<const typename G::Block*>(blk);
    __m256i acc = _mm256_setzero_si256();
    for (int k = 0; k < kSuperBlock / 32; ++k) {
      const grid_simd::Chunk c = grid_simd::chunk<G>(b, k);
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * k));
      const __m256i pairs = _mm256_maddubs_epi16(c.mag, _mm256_sign_epi8(xv, c.sgn));
      const __m256i ls = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(c.ls1)), _mm_set1_epi16(static_cast<int16_t>(c.ls0)));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ls));
    }
    out->isum[r] = quant_avx512::hsum_epi32(acc);
    out->d[r] = G::scale(b) * G::kUnit;
  }
  static __m512 lane_step(const RowLanes& l, float dx, __m512 acc) {
    return float_step(_mm512_load_ps(l.d), dx, _mm512_load_si512(l.isum), acc);
  }
  static void decode_rows(const WeightView& w, const Acts& a, const KActs& x, int64_t j0, int64_t j1, float* y) {
    decode_streamed<FormatGrid>(w, a, x, x.q, j0, j1, y);
  }
};

}  // namespace
}  // namespace ridge::kernels::kquant_avx512

namespace ridge::kernels::quant_avx512 {

#define RIDGE_GRID_ROWS(T, F, n) \
  void rows_##n(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) { kquant_avx512::rows_k<kquant_avx512::FormatGrid<F>>(w, a, j0, j1, y, ldy); }
RIDGE_GRID_FORMATS(RIDGE_GRID_ROWS)
#undef RIDGE_GRID_ROWS

}  // namespace ridge::kernels::quant_avx512
