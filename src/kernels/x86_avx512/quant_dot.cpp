// AVX-512 (BW + VNNI) dot products of Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K weight rows with Q8_0 / Q8_K
// activations. Same integer scheme as x86_avx2/quant_dot.cpp on 64 quants per instruction:
// vpmaddubsw (unsigned quant x signed activation) then vpdpwssd (VNNI) with the sub-block scales,
// or vpdpbusd directly where a block has one scale (the 32-element formats). Float terms accumulate in 16 lanes.
#include <immintrin.h>

// GCC 12's avx512fintrin.h feeds an uninitialized pass-through operand to the unmasked forms of
// many intrinsics (GCC bug 105593); -Wmaybe-uninitialized then fires inside our functions.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cstring>
#include <type_traits>

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

inline __m128i unpack_k4_scales(const uint8_t* s) {
  // Vector form of the 12-byte packing (scale_packing.h): bytes 0..3 / 4..7 hold the low 6 bits
  // of sc0..3 / mn0..3 and the top 2 bits of sc4..7 / mn4..7; bytes 8..11 their low nibbles.
  // Reads 16 bytes: the 4 after the scales are the block's quants, so it stays inside the block.
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
  const __m128i a = _mm_shuffle_epi8(x, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
  const __m128i b = _mm_shuffle_epi8(x, _mm_setr_epi8(0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7));
  const __m128i low6_or_nib = _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0);
  const __m128i high_nib = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15);
  const __m128i top2 = _mm_setr_epi8(0, 0, 0, 0, 48, 48, 48, 48, 0, 0, 0, 0, 48, 48, 48, 48);
  const __m128i lo = _mm_or_si128(_mm_and_si128(a, low6_or_nib), _mm_and_si128(_mm_srli_epi16(a, 4), high_nib));
  return _mm_or_si128(lo, _mm_and_si128(_mm_srli_epi16(b, 2), top2));  // bits 6,7 -> 4,5
}

// Moves bit `b0` of every byte of the low 256 bits, and bit `b1` of the high 256 bits, to bit 4
// (other bits garbage, masked by the caller with 0x10; see x86_avx2/quant_dot.cpp for why the
// 16-bit shifts are safe). Per-lane shift counts: vpsllvw / vpsrlvw.
inline __m512i bits_to_4(__m512i v, int b0, int b1) {
  const __m512i left = join(_mm256_set1_epi16(static_cast<short>(b0 <= 4 ? 4 - b0 : 0)),
                            _mm256_set1_epi16(static_cast<short>(b1 <= 4 ? 4 - b1 : 0)));
  const __m512i right = join(_mm256_set1_epi16(static_cast<short>(b0 > 4 ? b0 - 4 : 0)),
                             _mm256_set1_epi16(static_cast<short>(b1 > 4 ? b1 - 4 : 0)));
  return _mm512_srlv_epi16(_mm512_sllv_epi16(v, left), right);
}

// Q4_K/Q5_K read the activations in their nibble order: per super-block, for g = 0, 2:
// [x 64g .. +32 | x 64g+64 .. +32] (low nibbles of qs bytes 32g .. 32g+63), then
// [x 64g+32 .. +32 | x 64g+96 .. +32] (high nibbles); plus the pair sums bsum[2s] + bsum[2s+1].
// Built once per rows call and activation row (cols + cols / 16 bytes), so every weight row
// then needs only 64-byte loads.
struct NibbleOrderActs {
  int8_t* x = nullptr;       // [m, cols]
  int16_t* pairs = nullptr;  // [m, cols / 32]
  NibbleOrderActs(const Acts& a) : x(new int8_t[a.m * a.cols]), pairs(new int16_t[a.m * a.cols / 32]) {
    for (int64_t i = 0; i < a.m; ++i) {
      for (int64_t b = 0; b < a.cols / kQkK; ++b) {
        const int8_t* src = a.q8_qs + i * a.cols + kQkK * b;
        int8_t* dst = x + i * a.cols + kQkK * b;
        for (int g = 0; g < 4; g += 2) {
          for (int hi = 0; hi < 2; ++hi) {
            std::memcpy(dst + 64 * g + 64 * hi, src + 64 * g + 32 * hi, 32);
            std::memcpy(dst + 64 * g + 64 * hi + 32, src + 64 * g + 64 + 32 * hi, 32);
          }
        }
        const int16_t* bs = a.q8k_bsums + (i * (a.cols / kQkK) + b) * 16;
        int16_t* pr = pairs + (i * (a.cols / kQkK) + b) * 8;
        for (int s = 0; s < 8; ++s) pr[s] = static_cast<int16_t>(bs[2 * s] + bs[2 * s + 1]);
      }
    }
  }
  ~NibbleOrderActs() {
    delete[] x;
    delete[] pairs;
  }
  NibbleOrderActs(const NibbleOrderActs&) = delete;
  NibbleOrderActs& operator=(const NibbleOrderActs&) = delete;
};

// One weight row against MR activation rows (x row r: xq[r], xd[r], the pair sums ps[r]): the
// weight unpacking is shared, and each x row goes through exactly the operations of MR = 1, so
// out[r] does not depend on MR (batch invariance).
template <bool kFive, int MR, typename Block>
void dot_q45_k(const Block* w, const int8_t* const* xq, const float* const* xd,
               const int16_t* const* ps, int64_t nb, float* out) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i bit4 = _mm512_set1_epi8(0x10);
  // vpermw indices for pair (g, g + 1), g even: sel[g] = sub-blocks 2g | 2g + 2 (low nibbles),
  // sel[g + 1] = 2g + 1 | 2g + 3 (high nibbles)
  __m512i sel[4];
  for (int g = 0; g < 4; g += 2) {
    for (int hi = 0; hi < 2; ++hi) {
      sel[g + hi] = join(_mm256_set1_epi16(static_cast<short>(2 * g + hi)),
                         _mm256_set1_epi16(static_cast<short>(2 * g + 2 + hi)));
    }
  }
  __m512 acc[MR];
  __m128 accm[MR];
  for (int r = 0; r < MR; ++r) {
    acc[r] = _mm512_setzero_ps();
    accm[r] = _mm_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    const __m128i scm = unpack_k4_scales(w[b].scales);
    const __m128i mins16 = _mm_cvtepu8_epi16(_mm_srli_si128(scm, 8));
    const float dmin = half(w[b].dmin);
    const float d = half(w[b].d);
    for (int r = 0; r < MR; ++r) {
      const __m128i pairs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ps[r] + 8 * b));
      const __m128 msum = _mm_cvtepi32_ps(_mm_madd_epi16(mins16, pairs));
      accm[r] = _mm_fmadd_ps(msum, _mm_set1_ps(xd[r][b] * dmin), accm[r]);
    }
    const __m512i sc16 = _mm512_zextsi128_si512(_mm_cvtepu8_epi16(scm));
    __m256i qh;
    if constexpr (kFive) qh = load32(w[b].qh);
    __m512i sumi[MR], sumi2[MR];
    for (int r = 0; r < MR; ++r) sumi[r] = sumi2[r] = _mm512_setzero_si512();
    // 64 qs bytes = groups g, g+1: low nibbles are sub-blocks 2g | 2g+2, high 2g+1 | 2g+3,
    // matching the 64-byte runs of the nibble-ordered activations.
    for (int g = 0; g < 4; g += 2) {
      const __m512i q = load64(w[b].qs + 32 * g);
      __m512i lo = _mm512_and_si512(q, low4);
      __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
      if constexpr (kFive) {
        const __m512i h2 = join(qh, qh);
        lo = _mm512_or_si512(lo, _mm512_and_si512(bits_to_4(h2, 2 * g, 2 * g + 2), bit4));
        hi = _mm512_or_si512(hi, _mm512_and_si512(bits_to_4(h2, 2 * g + 1, 2 * g + 3), bit4));
      }
      const __m512i sc_lo = _mm512_permutexvar_epi16(sel[g], sc16);
      const __m512i sc_hi = _mm512_permutexvar_epi16(sel[g + 1], sc16);
      for (int r = 0; r < MR; ++r) {
        const int8_t* x = xq[r] + kQkK * b;
        sumi[r] = _mm512_dpwssd_epi32(sumi[r], _mm512_maddubs_epi16(lo, load64(x + 64 * g)), sc_lo);
        sumi2[r] = _mm512_dpwssd_epi32(sumi2[r], _mm512_maddubs_epi16(hi, load64(x + 64 * g + 64)),
                                       sc_hi);
      }
    }
    for (int r = 0; r < MR; ++r) {
      const __m512i t = _mm512_add_epi32(sumi[r], sumi2[r]);  // two chains: dpwssd latency
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_set1_ps(xd[r][b] * d), acc[r]);
    }
  }
  for (int r = 0; r < MR; ++r) {
    __m128 m = _mm_add_ps(accm[r], _mm_movehl_ps(accm[r], accm[r]));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    out[r] = hsum16(acc[r]) - _mm_cvtss_f32(m);
  }
}

// As dot_q45_k: one weight row against MR activation rows, per row the operations of MR = 1.
template <int MR>
void dot_q6_k(const BlockQ6_K* w, const int8_t* const* xq, const float* const* xd,
              const int16_t* const* bsums, int64_t nb, float* out) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i hmask = _mm256_set1_epi8(0x30);
  // vpermw indices: 128-bit lane L of chunk c (64 quants) takes scale 4c + L
  __m512i sel[4];
  for (int c = 0; c < 4; ++c) {
    sel[c] = _mm512_inserti32x4(
        _mm512_inserti32x4(
            _mm512_inserti32x4(_mm512_zextsi128_si512(_mm_set1_epi16(static_cast<short>(4 * c))),
                               _mm_set1_epi16(static_cast<short>(4 * c + 1)), 1),
            _mm_set1_epi16(static_cast<short>(4 * c + 2)), 2),
        _mm_set1_epi16(static_cast<short>(4 * c + 3)), 3);
  }
  __m512 acc[MR];
  for (int r = 0; r < MR; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i sc16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)));
    __m512i sumi[MR], sumi2[MR];
    for (int r = 0; r < MR; ++r) {
      const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(sc16, load32(bsums[r] + 16 * b)), 5);
      sumi[r] = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), off));
      sumi2[r] = _mm512_setzero_si512();
    }
    const __m512i sc = _mm512_zextsi256_si512(sc16);
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load32(w[b].ql + 64 * h);
      const __m256i ql1 = load32(w[b].ql + 64 * h + 32);
      const __m256i qh = load32(w[b].qh + 32 * h);
      const __m256i q0 = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), hmask));
      const __m256i q1 = _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), hmask));
      const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), _mm256_and_si256(qh, hmask));
      const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                         _mm256_and_si256(_mm256_srli_epi16(qh, 2), hmask));
      const __m512i q01 = join(q0, q1);
      const __m512i q23 = join(q2, q3);
      const __m512i sc_a = _mm512_permutexvar_epi16(sel[2 * h], sc);
      const __m512i sc_b = _mm512_permutexvar_epi16(sel[2 * h + 1], sc);
      for (int r = 0; r < MR; ++r) {
        const int8_t* x = xq[r] + kQkK * b;
        sumi[r] = _mm512_dpwssd_epi32(sumi[r], _mm512_maddubs_epi16(q01, load64(x + 128 * h)), sc_a);
        sumi2[r] = _mm512_dpwssd_epi32(sumi2[r], _mm512_maddubs_epi16(q23, load64(x + 128 * h + 64)),
                                       sc_b);
      }
    }
    const float d = half(w[b].d);
    for (int r = 0; r < MR; ++r) {
      const __m512i t = _mm512_add_epi32(sumi[r], sumi2[r]);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_set1_ps(xd[r][b] * d), acc[r]);
    }
  }
  for (int r = 0; r < MR; ++r) out[r] = hsum16(acc[r]);
}

// K formats: weight rows in groups of kRowGroup (a few KB, kept in L1) against groups of kMr
// activation rows, so each unpacked weight block serves kMr rows and each activation row is read
// from L2 once per group. Dot(wr, i, nb, std::integral_constant<int, MR>, out) computes rows
// i .. i + MR - 1 of y for weight row wr; its per-row result does not depend on MR.
constexpr int kMr = 4;
constexpr int64_t kRowGroup = 16;

template <typename Block, typename Dot>
void rows_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy,
            Dot dot) {
  const int64_t nb = a.cols / kQkK;
  const auto* base = static_cast<const uint8_t*>(w.data);
  float out[kMr];
  for (int64_t jg = j0; jg < j1; jg += kRowGroup) {
    const int64_t je = jg + kRowGroup < j1 ? jg + kRowGroup : j1;
    int64_t i = 0;
    for (; i + kMr <= a.m; i += kMr) {
      for (int64_t j = jg; j < je; ++j) {
        dot(reinterpret_cast<const Block*>(base + j * w.row_bytes), i, nb,
            std::integral_constant<int, kMr>{}, out);
        for (int r = 0; r < kMr; ++r) y[(i + r) * ldy + j] = out[r];
      }
    }
    for (; i < a.m; ++i) {
      for (int64_t j = jg; j < je; ++j) {
        dot(reinterpret_cast<const Block*>(base + j * w.row_bytes), i, nb,
            std::integral_constant<int, 1>{}, out);
        y[i * ldy + j] = out[0];
      }
    }
  }
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

namespace {

// The pointers of x rows i .. i + MR - 1 for the K-format dots.
template <int MR>
struct XRows {
  const int8_t* q[MR];
  const float* d[MR];
  const int16_t* s[MR];  // pair sums (Q4_K/Q5_K) or the 16 bsums (Q6_K) of each block
};

template <bool kFive, typename Block>
void rows_q45_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y,
                int64_t ldy) {
  const NibbleOrderActs x(a);
  rows_k<Block>(w, a, j0, j1, y, ldy, [&](const Block* wr, int64_t i, int64_t nb, auto mr, float* out) {
    constexpr int MR = decltype(mr)::value;
    XRows<MR> p;
    for (int r = 0; r < MR; ++r) {
      p.q[r] = x.x + (i + r) * a.cols;
      p.d[r] = a.q8k_d + (i + r) * nb;
      p.s[r] = x.pairs + (i + r) * nb * 8;
    }
    dot_q45_k<kFive, MR>(wr, p.q, p.d, p.s, nb, out);
  });
}

}  // namespace

void rows_q4_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_q45_k<false, BlockQ4_K>(w, a, j0, j1, y, ldy);
}

void rows_q5_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_q45_k<true, BlockQ5_K>(w, a, j0, j1, y, ldy);
}

void rows_q6_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_k<BlockQ6_K>(w, a, j0, j1, y, ldy,
                    [&](const BlockQ6_K* wr, int64_t i, int64_t nb, auto mr, float* out) {
    constexpr int MR = decltype(mr)::value;
    XRows<MR> p;
    for (int r = 0; r < MR; ++r) {
      p.q[r] = a.q8_qs + (i + r) * a.cols;
      p.d[r] = a.q8k_d + (i + r) * nb;
      p.s[r] = a.q8k_bsums + (i + r) * nb * 16;
    }
    dot_q6_k<MR>(wr, p.q, p.d, p.s, nb, out);
  });
}

}  // namespace ridge::kernels::quant_avx512
