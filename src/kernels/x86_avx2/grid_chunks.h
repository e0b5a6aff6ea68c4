// The grid formats' blocks (kernels/quant/grid_formats.h) 32 elements at a time in a register:
// four grid words or eight IQ3 grid dwords assembled from the indices, the signs as +-1 bytes from
// a table of sign masks. Shared by the AVX2 kernel (grid_formats.cpp) and the AVX-512 one
// (x86_avx512/kquant_grid.cpp). Include only from files compiled with the AVX2 flags (or a
// superset); internal linkage.
#pragma once

#include <immintrin.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "kernels/quant/grid_formats.h"

namespace ridge::kernels::grid_simd {
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
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * (k / 4)));
  const __m256i q = _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(2 * (k % 4))), _mm256_set1_epi8(3));
  return signed_chunk(_mm256_sub_epi8(q, _mm256_set1_epi8(1)), 1, 1);
}

// Ternary digits of TQ1_0's bytes b: ((b * m mod 256) * 3) >> 8 - 1 per byte, m the byte's power of
// three (ggml's rule), through 16-bit multiplies of the even and the odd bytes apart.
inline __m256i trits(__m256i b, __m256i m) {
  const __m256i low = _mm256_set1_epi16(0xff), three = _mm256_set1_epi16(3);
  const __m256i even = _mm256_and_si256(_mm256_mullo_epi16(_mm256_and_si256(b, low), _mm256_and_si256(m, low)), low);
  const __m256i odd = _mm256_and_si256(_mm256_mullo_epi16(_mm256_srli_epi16(b, 8), _mm256_srli_epi16(m, 8)), low);
  const __m256i t = _mm256_or_si256(_mm256_srli_epi16(_mm256_mullo_epi16(even, three), 8),
                                    _mm256_slli_epi16(_mm256_srli_epi16(_mm256_mullo_epi16(odd, three), 8), 8));
  return _mm256_sub_epi8(t, _mm256_set1_epi8(1));
}

// TQ1_0: elements 0-159 are digit k of qs[0..31] (k = 0..4, 32 at a time); 160-239 digit l of
// qs[32..47] (16 at a time); 240-255 digit l of qh[j] at 240 + 4 l + j.
template <>
Chunk chunk<Tq1_0>(const BlockTq1_0& b, int k) {
  constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  if (k < 5) {
    const __m256i q = trits(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)), _mm256_set1_epi8(static_cast<char>(kPow3[k])));
    return signed_chunk(q, 1, 1);
  }
  const __m128i tail = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 32));
  const int l = 2 * (k - 5);  // digits l, l + 1 of the tail bytes (k = 7: digit 4, then qh)
  __m256i bytes = _mm256_set_m128i(tail, tail);
  __m256i mult = _mm256_set_m128i(_mm_set1_epi8(static_cast<char>(kPow3[l + 1 < 5 ? l + 1 : 0])),
                                  _mm_set1_epi8(static_cast<char>(kPow3[l])));
  if (k == 7) {
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    bytes = _mm256_set_m128i(_mm_set1_epi32(static_cast<int>(qh)), tail);
    mult = _mm256_set_m128i(_mm_setr_epi8(1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27), _mm_set1_epi8(81));
  }
  return signed_chunk(trits(bytes, mult), 1, 1);
}

}  // namespace
}  // namespace ridge::kernels::grid_simd
