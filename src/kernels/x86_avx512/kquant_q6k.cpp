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

struct FormatQ6 {
  using Packed = PackedQ6;
  static constexpr int kSubs = 16;
  static constexpr int kGroups = 4;
  static constexpr int kExtra = 16;  // -32 bsum_s per sub-block
  static constexpr int64_t kBlockBytes = sizeof(BlockQ6_K);

  static void prepare_extra(const Acts& a, const KActs& x) {
    for (int64_t k = 0; k < a.m * x.nb * 16; ++k) x.extra[k] = -32 * a.q8k_bsums[k];
  }

  static __m512i part_init(const KActs& x, int64_t i, int64_t b, int s) {
    return bcst32(x.extra + (i * x.nb + b) * 16 + s);
  }

  static void pack(const Panel& p, int64_t b, Packed* out) {
    const int64_t off = b * kBlockBytes;
    prefetch_next(p, off, kBlockBytes);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i top2 = _mm512_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
      __m512i ql[2][8], qh[8];
      transpose_32(p, off + 64 * h, ql[0]);
      transpose_32(p, off + 64 * h + 32, ql[1]);
      transpose_32(p, off + 128 + 32 * h, qh);
      for (int k = 0; k < 4; ++k) {
        for (int t = 0; t < 8; ++t) {  // l = 4t .. 4t + 3: sub-block 8h + 2k + t / 4
          const __m512i src = ql[k & 1][t];
          const __m512i lo = _mm512_and_si512(k < 2 ? src : _mm512_srli_epi16(src, 4), low4);
          // bits 2k, 2k + 1 of qh to bits 4, 5 (16-bit shifts: each byte keeps its own bits)
          __m512i hi2 = qh[t];
          if (k == 0) hi2 = _mm512_slli_epi16(hi2, 4);
          if (k == 1) hi2 = _mm512_slli_epi16(hi2, 2);
          if (k == 3) hi2 = _mm512_srli_epi16(hi2, 2);
          const int s = 8 * h + 2 * k + t / 4;
          _mm512_store_si512(&out->q[4 * s + t % 4],
                             _mm512_or_si512(lo, _mm512_and_si512(hi2, top2)));
        }
      }
    }
    for (int g = 0; g < 4; ++g) {  // scales: 16 int8 at 192, sign-extended per lane
      const __m512i v = gather_dword(p, off + 192 + 4 * g);
      for (int j = 0; j < 4; ++j) {
        _mm512_store_si512(&out->sc[4 * g + j],
                           _mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * j), 24));
      }
    }
    // d at 208: the dword at 206 keeps the gather inside the block (scales 14, 15, d).
    out->d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(gather_dword(p, off + 206), 16)));
  }

  static __m512 finish(const Packed& p, const KActs& x, int64_t i, int64_t b, __m512i isum,
                       __m512 acc) {
    const __m512 scale = _mm512_mul_ps(p.d, _mm512_set1_ps(x.d[i * x.nb + b]));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), scale, acc);
  }
};

}  // namespace
}  // namespace ridge::kernels::kquant_avx512

namespace ridge::kernels::quant_avx512 {

void rows_q6_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  kquant_avx512::rows_k<kquant_avx512::FormatQ6>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::quant_avx512
