// AVX-512 VNNI matmul for Q8_0 weights (GGUF block: fp16 d, 32 int8 q) and Q8_0 activations: the
// Q8_0 block loader of the shared panel kernel (panel_q8.h, which describes the layout and the
// f32 accumulation; for Q8_0 it is ref_q8_0.cpp's specification exactly, bit for bit).
//
// GCC 12's _mm512_undefined_*() self-initializes a local, which -Wuninitialized reports when
// intrinsics such as _mm512_cvtph_ps are inlined at -O3 (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/x86_avx512/avx512.h"
#include "kernels/x86_avx512/panel_q8.h"

namespace ridge::kernels::avx512 {
namespace {

// Q8_0: the stored bytes are w ^ 0x80 = w + 128 (kOffset 128).
struct Q8_0Format {
  static constexpr int64_t kBlockBytes = 34;
  static constexpr int32_t kOffset = 128;
  static constexpr bool kMin = false;
  static constexpr int64_t kPrefetchEvery = 2;
  // A kPanels16 decode asks for every other line of its stream into L2 (prefetch_stream): the
  // lines between arrive as well, and the loop issues half the requests. Q4_0 and the K formats
  // keep every line (docs/tuning.md, "L2 prefetch strides").
  static constexpr int64_t kL2PrefetchStride = 128;
  // docs/tuning.md, "L2 prefetch distances".
  static constexpr int64_t kL2PrefetchBytes = 8192;

  RIDGE_PANEL_INLINE static void load(const uint8_t* const* row, int64_t off,
                                      PanelBlock<false>* out) {
    // z[r] = [row r qs (8 dwords) | row r + 8 qs (8 dwords)]
    __m512i z[8];
    for (int r = 0; r < 8; ++r) {
      const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[r] + off + 2));
      const __m256i hi =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[r + 8] + off + 2));
      z[r] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
    // 8 x 8 dword transpose inside each 256-bit half.
    __m512i t[8];
    for (int r = 0; r < 8; r += 2) {
      t[r] = _mm512_unpacklo_epi32(z[r], z[r + 1]);
      t[r + 1] = _mm512_unpackhi_epi32(z[r], z[r + 1]);
    }
    __m512i u[8];
    for (int r = 0; r < 8; r += 4) {
      u[r] = _mm512_unpacklo_epi64(t[r], t[r + 2]);
      u[r + 1] = _mm512_unpackhi_epi64(t[r], t[r + 2]);
      u[r + 2] = _mm512_unpacklo_epi64(t[r + 1], t[r + 3]);
      u[r + 3] = _mm512_unpackhi_epi64(t[r + 1], t[r + 3]);
    }
    // u[0..3] hold rows 0-3 (and 8-11), u[4..7] rows 4-7 (and 12-15); within a 128-bit lane,
    // u[0] = dword g0 of rows 0..3, u[1] = g1, u[2] = g2, u[3] = g3, with g4..7 in lane 1.
    const __m512i lo_idx = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const __m512i hi_idx = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int g = 0; g < 4; ++g) {
      out->w[g] = _mm512_xor_si512(_mm512_permutex2var_epi64(u[g], lo_idx, u[g + 4]), flip);
      out->w[g + 4] = _mm512_xor_si512(_mm512_permutex2var_epi64(u[g], hi_idx, u[g + 4]), flip);
    }
    out->d = load_halves(row, off);
  }

  // kPanels16 (weight_layout.h): the registers above, stored: 8 x 64 bytes of u, then 16 fp16 d.
  RIDGE_PANEL_INLINE static void load_layout(const uint8_t* p, PanelBlock<false>* out) {
    for (int g = 0; g < 8; ++g) out->w[g] = _mm512_loadu_si512(p + 64 * g);
    out->d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 512)));
  }
};

}  // namespace

void rows_q8_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y,
               int64_t ldy) {
  panel_matmul_rows<Q8_0Format>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::avx512
