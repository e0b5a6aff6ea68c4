// AVX-512 (BW + VNNI) dot products of Q4_0, Q4_1, Q5_0, Q5_1 weight rows with Q8_0 / Q8_1
// activations: vpdpbusd on 64 quants per instruction (one scale per 32-element block), float terms
// accumulated in 16 lanes. The K formats (Q4_K, Q5_K, Q6_K) are panel GEMMs of their own:
// kquant_panel.h, kquant_q45k.cpp, kquant_q6k.cpp.
#include <immintrin.h>

// GCC 12's avx512fintrin.h feeds an uninitialized pass-through operand to the unmasked forms of
// many intrinsics (GCC bug 105593); -Wmaybe-uninitialized then fires inside our functions.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cstring>

#include "kernels/quant/blocks.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/x86_avx512/quant_simd.h"

namespace ridge::kernels::quant_avx512 {
namespace {

inline __m512i load64(const void* p) { return _mm512_loadu_si512(p); }

// Quants of legacy blocks b, b+1 as 64 unsigned bytes in element order
// [lo_b | hi_b | lo_b+1 | hi_b+1]; the 5-bit formats add bit 4 from their 32-bit qh masks.
template <bool kFive, typename Block>
inline __m512i legacy_pair(const Block* w) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i q = _mm256_setr_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[0].qs)),
                                      _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[1].qs)));
  const __m256i lo = _mm256_and_si256(q, low4);                       // [lo_b | lo_b+1]
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);  // [hi_b | hi_b+1]
  __m512i qq = _mm512_shuffle_i64x2(join(lo, hi), join(lo, hi), _MM_SHUFFLE(3, 1, 2, 0));
  if constexpr (kFive) {
    uint32_t h0, h1;
    std::memcpy(&h0, w[0].qh, 4);
    std::memcpy(&h1, w[1].qh, 4);
    const __mmask64 k = static_cast<__mmask64>(h0) | (static_cast<__mmask64>(h1) << 32);
    qq = _mm512_or_si512(qq, _mm512_maskz_mov_epi8(k, _mm512_set1_epi8(0x10)));
  }
  return qq;
}

// Legacy formats: sum x (d q + m) or sum x d (q - offset) = d * vpdpbusd(q, x) plus a multiple
// of the activation block sum; four blocks per iteration so their fp16 scales convert at once.
template <typename Block, bool kFive, bool kMin>
float dot_legacy(const Block* w, const int8_t* xq, const float* xd, const int32_t* xsum,
                 const float* xs, int64_t nb) {
  constexpr float kOffset = kFive ? 16.0f : 8.0f;
  const __m512i lanes01 = join(_mm256_set1_epi32(0), _mm256_set1_epi32(1));
  const __m512i lanes23 = join(_mm256_set1_epi32(2), _mm256_set1_epi32(3));
  __m512 acc = _mm512_setzero_ps();
  __m128 acc_sum = _mm_setzero_ps();  // sum over blocks of coef * xsum (kMin: m * xs)
  int64_t b = 0;
  for (; b + 3 < nb; b += 4) {
    const __m128 x_d = _mm_loadu_ps(xd + b);
    const __m128 dd = _mm_mul_ps(_mm_cvtph_ps(_mm_setr_epi16(
        static_cast<short>(w[b].d), static_cast<short>(w[b + 1].d), static_cast<short>(w[b + 2].d),
        static_cast<short>(w[b + 3].d), 0, 0, 0, 0)), x_d);
    if constexpr (kMin) {  // m * s, s ggml's Q8_1 term of the block
      const __m128 m = _mm_cvtph_ps(_mm_setr_epi16(
          static_cast<short>(w[b].m), static_cast<short>(w[b + 1].m), static_cast<short>(w[b + 2].m),
          static_cast<short>(w[b + 3].m), 0, 0, 0, 0));
      acc_sum = _mm_fmadd_ps(m, _mm_loadu_ps(xs + b), acc_sum);
    } else {
      const __m128 coef = _mm_mul_ps(dd, _mm_set1_ps(-kOffset));
      acc_sum = _mm_fmadd_ps(coef, _mm_cvtepi32_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xsum + b))), acc_sum);
    }
    const __m512 dd16 = _mm512_zextps128_ps512(dd);
    const __m512i t01 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), legacy_pair<kFive>(w + b), load64(xq + kQk * b));
    const __m512i t23 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), legacy_pair<kFive>(w + b + 2), load64(xq + kQk * b + 64));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t01), _mm512_permutexvar_ps(lanes01, dd16), acc);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t23), _mm512_permutexvar_ps(lanes23, dd16), acc);
  }
  float tail = 0.0f;
  for (; b < nb; ++b) {  // up to 3 blocks: one at a time with 256-bit VNNI
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].qs));
    __m256i qq = _mm256_and_si256(_mm256_setr_m128i(q, _mm_srli_epi16(q, 4)), _mm256_set1_epi8(0x0f));
    if constexpr (kFive) {
      uint32_t h;
      std::memcpy(&h, w[b].qh, 4);
      qq = _mm256_or_si256(qq, _mm256_maskz_mov_epi8(static_cast<__mmask32>(h), _mm256_set1_epi8(0x10)));
    }
    const __m256i t = _mm256_dpbusd_epi32(_mm256_setzero_si256(), qq, load32(xq + kQk * b));
    const float dd = half(w[b].d) * xd[b];
    float min_term;
    if constexpr (kMin) {
      min_term = half(w[b].m) * xs[b];
    } else {
      min_term = -kOffset * dd * static_cast<float>(xsum[b]);
    }
    tail += hsum8(_mm256_cvtepi32_ps(t)) * dd + min_term;
  }
  __m128 s = _mm_add_ps(acc_sum, _mm_movehl_ps(acc_sum, acc_sum));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return hsum16(acc) + _mm_cvtss_f32(s) + tail;
}

template <typename Block, int kBlock, typename Dot>
void rows(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy,
          Dot dot) {
  const int64_t nb = a.cols / kBlock;
  for (int64_t j = j0; j < j1; ++j) {
    const auto* wr = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w.data) + j * w.row_bytes);
    for (int64_t i = 0; i < a.m; ++i) y[i * ldy + j] = dot(wr, i, nb);
  }
}

}  // namespace

namespace {
template <typename Block, bool kFive, bool kMin>
void rows_legacy(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<Block, kQk>(w, a, j0, j1, y, ldy, [&](const Block* wr, int64_t i, int64_t nb) {
    return dot_legacy<Block, kFive, kMin>(wr, a.q8_qs + i * a.cols, a.q8_d + i * nb, a.q8_sum + i * nb,
                                          kMin ? a.q8_s + i * nb : nullptr, nb);
  });
}

}  // namespace

void rows_q4_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_legacy<BlockQ4_0, false, false>(w, a, j0, j1, y, ldy);
}
void rows_q4_1(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_legacy<BlockQ4_1, false, true>(w, a, j0, j1, y, ldy);
}
void rows_q5_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_legacy<BlockQ5_0, true, false>(w, a, j0, j1, y, ldy);
}
void rows_q5_1(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_legacy<BlockQ5_1, true, true>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::quant_avx512
