// AVX-512 VNNI matmul for IQ4_XS weights with Q8_K activations: the panel GEMM of kquant_panel.h
// with this format's unpacking, bit-identical to quant_ref::rows_iq4_xs.
//
// Super-block (blocks.h): fp16 d, 6-bit scales ls_ib (low 4 bits in scales_l, high 2 in
// scales_h), then per sub-block ib of 32 the 16 qs bytes of IQ4_NL (element j < 16 the low nibble
// of byte j, j + 16 the high one); element = d * (ls_ib - 32) * kIq4NlValues[nibble]. The panel
// reads it as 16 sub-blocks of 16 (kSubs), each of 4 groups of 4: the table values shifted to
// unsigned (+128, one vpshufb per 16 bytes), each sub-block's vpdpbusd chain starting from
// -128 bsum_s (OffsetChains), times ls - 32 of its half. isum = sum_ib (ls_ib - 32) * dot_ib is
// exact; the float step is the K formats' (acc = fma(float(isum), d * dx, acc)).
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
  static constexpr bool kRowDecode = false;

  static void pack(const Panel& p, int64_t b, Packed* out) {
    const int64_t off = b * kBlockBytes;
    prefetch_next(p, off, kBlockBytes);
    const __m512i table = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kIq4NlValuesU.data())));
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int h = 0; h < 4; ++h) {  // sub-blocks of 32: 2 h and 2 h + 1
      __m512i qs[8];               // qs[t] lane r: qs bytes 32 h + 4 t .. + 3 of row r
      transpose_32(p, off + kQsAt + 32 * h, qs);
      for (int t = 0; t < 8; ++t) {
        const int ib = 2 * h + t / 4, g = t % 4;
        out->q[4 * (2 * ib) + g] = _mm512_shuffle_epi8(table, _mm512_and_si512(qs[t], low4));
        out->q[4 * (2 * ib + 1) + g] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(qs[t], 4), low4));
      }
    }
    const __m512i head = gather_dword(p, off);        // d, scales_h
    const __m512i low = gather_dword(p, off + 4);     // scales_l
    const __m512i high = _mm512_srli_epi32(head, 16);
    for (int ib = 0; ib < 8; ++ib) {
      const __m512i lo4 = _mm512_and_si512(_mm512_srli_epi32(low, 4 * ib), _mm512_set1_epi32(15));
      const __m512i hi2 = _mm512_and_si512(_mm512_srli_epi32(high, 2 * ib), _mm512_set1_epi32(3));
      const __m512i ls = _mm512_sub_epi32(_mm512_or_si512(lo4, _mm512_slli_epi32(hi2, 4)), _mm512_set1_epi32(32));
      out->sc[2 * ib] = ls;
      out->sc[2 * ib + 1] = ls;
    }
    out->d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_and_si512(head, _mm512_set1_epi32(0xffff))));
  }

  static __m512 finish(const Packed& p, const KActs& x, int64_t i, int64_t b, __m512i isum, __m512 acc) {
    return float_step(p.d, x.d[i * x.nb + b], isum, acc);
  }
};

}  // namespace
}  // namespace ridge::kernels::kquant_avx512

namespace ridge::kernels::quant_avx512 {

void rows_iq4_xs(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  kquant_avx512::rows_k<kquant_avx512::FormatIq4Xs>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::quant_avx512
