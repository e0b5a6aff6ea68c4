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

template <typename G>
struct FormatGrid : OffsetChains<-kGridOffset> {
  // AMX (kquant_panel.h): q in -62..62 times the digits of ls in 1..31, base 4 (top digit 0..1).
  static constexpr int kAmxDigits = 3;
  static constexpr int kAmxDigitBits = 2;
  using Packed = PackedGrid;
  static constexpr int kSubs = 16;
  static constexpr int kGroups = 4;
  static constexpr bool kRowDecode = false;

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

  static __m512 finish(const Packed& p, const KActs& x, int64_t i, int64_t b, __m512i isum, __m512 acc) {
    const __m512 dd = rounded512(_mm512_mul_ps(p.d, _mm512_set1_ps(x.d[i * x.nb + b])));
    return _mm512_add_ps(acc, rounded512(_mm512_mul_ps(dd, _mm512_cvtepi32_ps(isum))));
  }
};

}  // namespace
}  // namespace ridge::kernels::kquant_avx512

namespace ridge::kernels::quant_avx512 {

#define RIDGE_GRID_ROWS(name, Format)                                                                 \
  void name(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {     \
    kquant_avx512::rows_k<kquant_avx512::FormatGrid<Format>>(w, a, j0, j1, y, ldy);            \
  }
RIDGE_GRID_ROWS(rows_tq1_0, Tq1_0)
RIDGE_GRID_ROWS(rows_tq2_0, Tq2_0)
RIDGE_GRID_ROWS(rows_iq2_xxs, Iq2Xxs)
RIDGE_GRID_ROWS(rows_iq2_xs, Iq2Xs)
RIDGE_GRID_ROWS(rows_iq2_s, Iq2S)
RIDGE_GRID_ROWS(rows_iq3_xxs, Iq3Xxs)
RIDGE_GRID_ROWS(rows_iq3_s, Iq3S)
RIDGE_GRID_ROWS(rows_iq1_s, Iq1S)
RIDGE_GRID_ROWS(rows_iq1_m, Iq1M)
#undef RIDGE_GRID_ROWS

}  // namespace ridge::kernels::quant_avx512
