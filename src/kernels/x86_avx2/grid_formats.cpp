// AVX2 matmul of the grid formats (kernels/quant/grid_formats.h: IQ1-IQ3, TQ1_0, TQ2_0) with Q8_K
// activations, bit-identical to the reference (kernels/quant/grid_rows.cpp): per super-block the
// exact integer isum = sum_s ls_s * sum_{e in s} q_e x_e, acc = acc + (d * dx) * float(isum)
// (a rounded product, then a rounded sum), and acc * kUnit at the end of the row.
//
// A panel of 8 weight rows, one per f32 lane. Per super-block each row's block is unpacked once,
// 32 elements at a time (four grid words or eight IQ3 grid dwords assembled in a register, their
// signs as +-1 bytes from a table of sign masks), and serves every x row: per 32 elements
// vpmaddubsw of |q| with x carrying q's sign (pairs <= 2 * 62 * 127: no saturation), vpmaddwd by
// the two sub-blocks' scales, and a vphaddd tree that leaves row r's isum in lane r. The f32 accumulators of all x rows live
// in a per-thread buffer while the panel's super-blocks are walked in order.
#include <immintrin.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "base/check.h"
#include "base/thread_scratch.h"
#include "kernels/quant/grid_formats.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/x86_avx2/panel_rows.h"
#include "kernels/x86_avx2/quant_simd.h"

namespace ridge::kernels::quant_avx2 {
namespace {

// 32 elements of a block as vpmaddubsw reads them: |q| (mag) and q's sign carried by sgn (bytes
// whose sign is q's, never 0 where q is not), and the scales of their two sub-blocks of 16.
struct Chunk {
  __m256i mag, sgn;
  int ls0, ls1;
};

inline __m256i grid4(const std::array<uint64_t, 256>& g, uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3) {
  return _mm256_set_epi64x(static_cast<long long>(g[i3]), static_cast<long long>(g[i2]),
                           static_cast<long long>(g[i1]), static_cast<long long>(g[i0]));
}
template <size_t N>
inline __m256i words4(const std::array<uint64_t, N>& t, const uint32_t (&i)[4]) {
  return _mm256_set_epi64x(static_cast<long long>(t[i[3]]), static_cast<long long>(t[i[2]]),
                           static_cast<long long>(t[i[1]]), static_cast<long long>(t[i[0]]));
}
template <size_t N>
inline __m256i dwords8(const std::array<uint32_t, N>& t, const uint32_t (&i)[8]) {
  return _mm256_setr_epi32(static_cast<int>(t[i[0]]), static_cast<int>(t[i[1]]), static_cast<int>(t[i[2]]),
                           static_cast<int>(t[i[3]]), static_cast<int>(t[i[4]]), static_cast<int>(t[i[5]]),
                           static_cast<int>(t[i[6]]), static_cast<int>(t[i[7]]));
}
// Sign masks (0xff where negative) as +-1 bytes.
inline __m256i signs_of(__m256i masks) { return _mm256_or_si256(masks, _mm256_set1_epi8(1)); }
// Signed bytes q as a chunk.
inline Chunk signed_chunk(__m256i q, int ls0, int ls1) { return {_mm256_abs_epi8(q), q, ls0, ls1}; }

template <typename F>
Chunk chunk(const typename F::Block& b, int k);

template <>
Chunk chunk<Iq2Xxs>(const BlockIq2Xxs& b, int k) {
  const uint32_t idx = grid_detail::load32(b.qs + 4 * k), aux = grid_detail::load32(b.qs + 4 * k + 2);
  const int ls = static_cast<int>(2 * (aux >> 28) + 1);
  const uint32_t s[4] = {aux & 127, (aux >> 7) & 127, (aux >> 14) & 127, (aux >> 21) & 127};
  return {grid4(kIq2XxsGrid, idx & 255, (idx >> 8) & 255, (idx >> 16) & 255, idx >> 24),
          signs_of(words4(kEvenSignBytes, s)), ls, ls};
}

template <>
Chunk chunk<Iq2Xs>(const BlockIq2Xs& b, int k) {
  const uint32_t v[4] = {b.qs[4 * k], b.qs[4 * k + 1], b.qs[4 * k + 2], b.qs[4 * k + 3]};
  const uint32_t g[4] = {v[0] & 511, v[1] & 511, v[2] & 511, v[3] & 511};
  const uint32_t s[4] = {v[0] >> 9, v[1] >> 9, v[2] >> 9, v[3] >> 9};
  return {words4(kIq2XsGrid, g), signs_of(words4(kEvenSignBytes, s)), 2 * (b.scales[k] & 15) + 1,
          2 * (b.scales[k] >> 4) + 1};
}

template <>
Chunk chunk<Iq2S>(const BlockIq2S& b, int k) {
  const uint32_t h = b.qh[k];
  const uint8_t* q = b.qs + 4 * k;
  const uint32_t g[4] = {q[0] | ((h << 8) & 0x300), q[1] | ((h << 6) & 0x300), q[2] | ((h << 4) & 0x300),
                         q[3] | ((h << 2) & 0x300)};
  const uint8_t* sb = b.qs + 32 + 4 * k;
  const uint32_t s[4] = {sb[0], sb[1], sb[2], sb[3]};
  return {words4(kIq2SGrid, g), signs_of(words4(kSignBytes, s)), 2 * (b.scales[k] & 15) + 1,
          2 * (b.scales[k] >> 4) + 1};
}

template <>
Chunk chunk<Iq3Xxs>(const BlockIq3Xxs& b, int k) {
  const uint8_t* q = b.qs + 8 * k;
  const uint32_t aux = grid_detail::load32(b.qs + 64 + 4 * k);
  const uint32_t g[8] = {q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]};
  const uint32_t s[4] = {aux & 127, (aux >> 7) & 127, (aux >> 14) & 127, (aux >> 21) & 127};
  const int ls = static_cast<int>(2 * (aux >> 28) + 1);
  return {dwords8(kIq3XxsGrid, g), signs_of(words4(kEvenSignBytes, s)), ls, ls};
}

template <>
Chunk chunk<Iq3S>(const BlockIq3S& b, int k) {
  const uint8_t* q = b.qs + 8 * k;
  const uint32_t h = b.qh[k];
  uint32_t g[8];
  for (int e = 0; e < 8; ++e) g[e] = q[e] | ((h << (8 - e)) & 256);
  const uint8_t* sb = b.signs + 4 * k;
  const uint32_t s[4] = {sb[0], sb[1], sb[2], sb[3]};
  const int ls = 2 * ((b.scales[k / 2] >> (4 * (k % 2))) & 15) + 1;
  return {dwords8(kIq3SGrid, g), signs_of(words4(kSignBytes, s)), ls, ls};
}

// 8 g + delta of IQ1 grid bytes g (int8 -1, 0, +1) and per-group deltas (bytes +-1).
inline __m256i iq1_values(__m256i g, __m256i delta) {
  const __m256i g2 = _mm256_add_epi8(g, g), g4 = _mm256_add_epi8(g2, g2);
  return _mm256_add_epi8(_mm256_add_epi8(g4, g4), delta);
}

template <>
Chunk chunk<Iq1S>(const BlockIq1S& b, int k) {
  const uint32_t h = b.qh[k];
  const uint8_t* q = b.qs + 4 * k;
  const uint32_t g[4] = {q[0] | ((h & 7) << 8), q[1] | (((h >> 3) & 7) << 8), q[2] | (((h >> 6) & 7) << 8),
                         q[3] | (((h >> 9) & 7) << 8)};
  const int ls = static_cast<int>(2 * ((h >> 12) & 7) + 1);
  return signed_chunk(iq1_values(words4(kIq1SGrid, g), _mm256_set1_epi8((h & 0x8000) != 0 ? -1 : 1)), ls, ls);
}

template <>
Chunk chunk<Iq1M>(const BlockIq1M& b, int k) {
  const uint32_t h0 = b.qh[2 * k], h1 = b.qh[2 * k + 1];
  const uint8_t* q = b.qs + 4 * k;
  const uint32_t g[4] = {q[0] | ((h0 & 7) << 8), q[1] | (((h0 >> 4) & 7) << 8), q[2] | ((h1 & 7) << 8),
                         q[3] | (((h1 >> 4) & 7) << 8)};
  auto delta = [](uint32_t bit) { return static_cast<long long>(bit != 0 ? ~0ull : 0x0101010101010101ull); };
  const __m256i d = _mm256_set_epi64x(delta(h1 & 0x80), delta(h1 & 0x08), delta(h0 & 0x80), delta(h0 & 0x08));
  uint16_t sc;
  std::memcpy(&sc, b.scales + 2 * (k / 2), 2);
  const int shift = 6 * (k % 2);
  return signed_chunk(iq1_values(words4(kIq1SGrid, g), d), 2 * ((sc >> shift) & 7) + 1,
                      2 * ((sc >> (shift + 3)) & 7) + 1);
}

template <>
Chunk chunk<Tq2_0>(const BlockTq2_0& b, int k) {
  const __m256i v = load32(b.qs + 32 * (k / 4));
  const __m256i q = _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(2 * (k % 4))), _mm256_set1_epi8(3));
  return signed_chunk(_mm256_sub_epi8(q, _mm256_set1_epi8(1)), 1, 1);
}

// TQ1_0's digits are read by the scalar unpack (elements 32 k .. 32 k + 31 of it).
template <>
Chunk chunk<Tq1_0>(const BlockTq1_0& b, int k) {
  alignas(32) int8_t q[32];
  for (int e = 0; e < 32; ++e) {
    const int at = 32 * k + e;
    if (at < 160) {
      q[e] = grid_detail::trit(b.qs[at % 32], at / 32);
    } else if (at < 240) {
      q[e] = grid_detail::trit(b.qs[32 + (at - 160) % 16], (at - 160) / 16);
    } else {
      q[e] = grid_detail::trit(b.qh[(at - 240) % 4], (at - 240) / 4);
    }
  }
  return signed_chunk(_mm256_load_si256(reinterpret_cast<const __m256i*>(q)), 1, 1);
}

// One super-block of a panel, unpacked: per row and 32 elements k, the chunk's bytes and the int16
// scale pattern of its two sub-blocks (lanes 0-7: ls0, lanes 8-15: ls1); the rows' d in lanes.
struct PanelGrid {
  __m256i mag[kPanel][kQkK / 32], sgn[kPanel][kQkK / 32], ls[kPanel][kQkK / 32];
  __m256 d;
};

template <typename F>
void unpack_panel(const uint8_t* const* row, int64_t b, PanelGrid& p) {
  alignas(32) float d[kPanel];
  for (int r = 0; r < kPanel; ++r) {
    const auto& blk = reinterpret_cast<const typename F::Block*>(row[r])[b];
    d[r] = F::scale(blk);
    for (int k = 0; k < kQkK / 32; ++k) {
      const Chunk c = chunk<F>(blk, k);
      p.mag[r][k] = c.mag;
      p.sgn[r][k] = c.sgn;
      p.ls[r][k] = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(c.ls1)), _mm_set1_epi16(static_cast<int16_t>(c.ls0)));
    }
  }
  p.d = _mm256_load_ps(d);
}

// Lane r: row r's isum against the 256 x bytes at x.
inline __m256i panel_isums(const PanelGrid& p, const int8_t* x) {
  __m256i s[kPanel];
  for (int r = 0; r < kPanel; ++r) s[r] = _mm256_setzero_si256();
  for (int k = 0; k < kQkK / 32; ++k) {
    const __m256i xv = load32(x + 32 * k);
    for (int r = 0; r < kPanel; ++r) {
      const __m256i pairs = _mm256_maddubs_epi16(p.mag[r][k], _mm256_sign_epi8(xv, p.sgn[r][k]));
      s[r] = _mm256_add_epi32(s[r], _mm256_madd_epi16(pairs, p.ls[r][k]));
    }
  }
  return fold8_epi32(s);
}

template <typename F>
void rows(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  const int64_t nb = a.cols / kQkK;
  RIDGE_CHECK(w.row_bytes == static_cast<uint64_t>(nb) * sizeof(typename F::Block));
  ThreadScratch scratch(kScratchKernelLanes, static_cast<size_t>(a.m) * kPanel * sizeof(float) + sizeof(PanelGrid) + 64);
  auto* base = static_cast<uint8_t*>(scratch.data());
  auto* p = reinterpret_cast<PanelGrid*>(base + (-reinterpret_cast<uintptr_t>(base) & 63));
  auto* acc = reinterpret_cast<float*>(p + 1);
  for (int64_t j = j0; j < j1; j += kPanel) {
    const int n_valid = static_cast<int>(j1 - j < kPanel ? j1 - j : kPanel);
    const uint8_t* row[kPanel];
    panel_row_pointers(w, j, n_valid, row);
    for (int64_t i = 0; i < a.m * kPanel; ++i) acc[i] = 0.0f;
    for (int64_t b = 0; b < nb; ++b) {
      unpack_panel<F>(row, b, *p);
      for (int64_t i = 0; i < a.m; ++i) {
        const __m256i isum = panel_isums(*p, a.q8_qs + i * a.cols + b * kQkK);
        const __m256 dd = rounded(_mm256_mul_ps(p->d, _mm256_set1_ps(a.q8k_d[i * nb + b])));
        float* ai = acc + i * kPanel;
        _mm256_storeu_ps(ai, _mm256_add_ps(_mm256_loadu_ps(ai), rounded(_mm256_mul_ps(dd, _mm256_cvtepi32_ps(isum)))));
      }
    }
    for (int64_t i = 0; i < a.m; ++i) {
      store_lanes(y + i * ldy + j, _mm256_mul_ps(_mm256_loadu_ps(acc + i * kPanel), _mm256_set1_ps(F::kUnit)), n_valid);
    }
  }
}

}  // namespace

void rows_tq1_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<Tq1_0>(w, a, j0, j1, y, ldy);
}
void rows_tq2_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<Tq2_0>(w, a, j0, j1, y, ldy);
}
void rows_iq2_xxs(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<Iq2Xxs>(w, a, j0, j1, y, ldy);
}
void rows_iq2_xs(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<Iq2Xs>(w, a, j0, j1, y, ldy);
}
void rows_iq2_s(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<Iq2S>(w, a, j0, j1, y, ldy);
}
void rows_iq3_xxs(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<Iq3Xxs>(w, a, j0, j1, y, ldy);
}
void rows_iq3_s(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<Iq3S>(w, a, j0, j1, y, ldy);
}
void rows_iq1_s(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<Iq1S>(w, a, j0, j1, y, ldy);
}
void rows_iq1_m(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<Iq1M>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::quant_avx2
