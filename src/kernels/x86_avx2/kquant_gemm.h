// The AVX2 K-format matmul (Q2_K ... Q6_K; formats in kquant_formats.h): a dot product per
// output for decode, a panel GEMM for batches. Include only from x86_avx2/ files (AVX2 flags).
//
// GEMM. Output rows are taken 8 at a time (a panel, one per 32-bit lane). Each super-block of
// the panel is unpacked once into a Packed block: register g holds the unsigned quants 4g..4g+3
// of every row (lane r: row r), the sub-block scales and the bias weights as int16 pairs per
// lane, d and dmin as f32 lanes. Each x row then runs over it with the activation's 4 bytes
// broadcast: vpmaddubsw gives every lane two int16 partials, kChain of which are added in int16
// (bounds in kquant_formats.h) before one vpmaddwd with the sub-block's scale widens them into
// the row's int32 total. About 2 vector operations per 32 multiply-adds, where the dot product
// needs 4 (the activation load, vpmaddubsw, vpmaddwd, the add) plus the unpack and the scale
// shuffle for every x row. The per-block integers are the dot product's, and the float step is
// the canonical one in the row's lane: the same bits as the dot product (batch invariance).
// Numbers and the choice between the paths: docs/kernels.md.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "base/thread_scratch.h"
#include "kernels/matmul_driver.h"
#include "kernels/x86_avx2/kquant_formats.h"

namespace ridge::kernels::quant_avx2 {
namespace {

constexpr int kKPanel = 8;       // weight rows per panel
constexpr int kKMr = 4;          // x rows per micro-kernel pass
// x rows from which the panel GEMM beats the dots (docs/tuning.md, "AVX2 paths").
constexpr int64_t kKGemmMinM = 4;

// The decode dot's scales, as word registers from which one vpshufb gives register n's (32
// elements): 8 sub-blocks of 32: sub-block n's scale in both 128-bit lanes, from words 0-7 in
// both lanes; 16 of 16: sub-blocks 2n, 2n + 1 in the low and high lane, from words 0-7 (n < 4)
// or 8-15 (n >= 4) in both lanes.
struct DecodeScales {
  __m256i lo, hi;  // words 0-7 / 8-15 in both lanes
};
inline DecodeScales decode_scales(__m256i words) {
  return {_mm256_permute4x64_epi64(words, 0x44), _mm256_permute4x64_epi64(words, 0xee)};
}
template <typename F>
inline __m256i register_scale(const DecodeScales& sv, int n) {
  if constexpr (F::kSubs == 8) return _mm256_shuffle_epi8(sv.lo, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * n)));
  const int k = n % 4;  // words 2k and 2k + 1 of its half
  const char l0 = static_cast<char>(4 * k), l1 = static_cast<char>(4 * k + 1);
  const char h0 = static_cast<char>(4 * k + 2), h1 = static_cast<char>(4 * k + 3);
  const __m256i pick = _mm256_setr_epi8(l0, l1, l0, l1, l0, l1, l0, l1, l0, l1, l0, l1, l0, l1, l0, l1,  //
                                        h0, h1, h0, h1, h0, h1, h0, h1, h0, h1, h0, h1, h0, h1, h0, h1);
  return _mm256_shuffle_epi8(n < 4 ? sv.lo : sv.hi, pick);
}

// The canonical float step of F in 8 lanes, one output row per lane (kquant_formats.h); with an
// offset (Q3_K, Q6_K) isum already holds isum_b + offset * bias_b and bias is not read.
template <typename F>
inline __m256 step8(__m256i isum, __m256i bias, __m256 d, __m256 dmin, __m256 dx, __m256 acc) {
  if constexpr (F::kMins) {
    const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(bias), dmin);
    return _mm256_fmadd_ps(_mm256_fmsub_ps(_mm256_cvtepi32_ps(isum), d, t), dx, acc);
  } else {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, dx), acc);
  }
}

// A decode panel's integers of one super-block, per row, before the fold (lane sums pending).
struct alignas(32) RowPartials {
  __m256i sumi[kKPanel];
  __m256i bias[kKPanel];
  float d[kKPanel];
  float dmin[kKPanel];
};

// Decode: the outputs of rows row[0..7] against one x row. The rows are streamed one after
// another, each in block order (the hardware prefetcher follows; 4 rows read side by side
// measured 3x slower on a matrix >> L3), leaving each block's 8-lane integer partials in
// parts[b]; then per block one hadd tree gives the 8 rows' exact totals in their lanes and the
// canonical step runs there, as in the GEMM: the same bits.
template <typename F>
void decode_panel(const uint8_t* const row[kKPanel], const int8_t* xq, const float* xd,
                  const int16_t* bsums, int64_t nb, RowPartials* parts, float out[kKPanel]) {
  using Block = typename F::Block;
  for (int r = 0; r < kKPanel; ++r) {
    const auto* w = reinterpret_cast<const Block*>(row[r]);
    for (int64_t b = 0; b < nb; ++b) {
      const Block& blk = w[b];
      const int8_t* x = xq + kQkK * b;
      const DecodeScales sv = decode_scales(F::scale_words(blk));
      __m256i q[8];
      F::unpack(blk, q);
      const __m256i bias = _mm256_madd_epi16(F::bias_words(blk), F::x_bias(bsums + 16 * b));
      // with an offset: its bias in the same lanes from the start
      __m256i sumi = _mm256_setzero_si256();
      if constexpr (!F::kMins) sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(bias, F::kOffsetShift));
      for (int n = 0; n < 8; ++n) {
        const __m256i p = _mm256_maddubs_epi16(q[n], load32(x + 32 * n));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, register_scale<F>(sv, n)));
      }
      parts[b].sumi[r] = sumi;
      if constexpr (F::kMins) parts[b].bias[r] = bias;
      parts[b].d[r] = F::d(blk);
      parts[b].dmin[r] = F::dmin(blk);
    }
  }
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i bias = F::kMins ? fold8_epi32(parts[b].bias) : _mm256_setzero_si256();
    acc = step8<F>(fold8_epi32(parts[b].sumi), bias, _mm256_load_ps(parts[b].d),
                   _mm256_load_ps(parts[b].dmin), _mm256_set1_ps(xd[b]), acc);
  }
  _mm256_storeu_ps(out, acc);
}

template <typename F>
struct alignas(32) Packed {
  __m256i q[64];                 // q[g] lane r: row r's quants 4g .. 4g + 3
  __m256i sc[F::kSubs];          // lane r: (sc_s, sc_s) of row r
  __m256i bias[F::kBiasPairs];   // lane r: row r's bias weights 2k, 2k + 1
  __m256 d, dmin;
};

// Super-block b of the panel's rows into `out`; `ahead`: bytes from a row to the same row of the
// next panel, whose block is prefetched into L2 (the rows are read a block at a time, which the
// hardware prefetcher does not follow).
template <typename F>
void pack_block(const uint8_t* const row[kKPanel], int64_t b, int64_t ahead, Packed<F>* out) {
  using Block = typename F::Block;
  constexpr auto kBytes = static_cast<int64_t>(sizeof(Block));
  __m256i regs[8][kKPanel];  // [register n][row r]
  __m256i words[kKPanel], bias_words[kKPanel], dup_lo[kKPanel], dup_hi[kKPanel];  // per row
  alignas(32) float d[kKPanel], dmin[kKPanel];
  for (int r = 0; r < kKPanel; ++r) {
    const uint8_t* at = row[r] + b * kBytes;
    for (int64_t k = 0; k < kBytes; k += 64) _mm_prefetch(reinterpret_cast<const char*>(at + ahead + k), _MM_HINT_T1);
    const Block& blk = *reinterpret_cast<const Block*>(at);
    __m256i q[8];
    F::unpack(blk, q);
    for (int n = 0; n < 8; ++n) regs[n][r] = q[n];
    words[r] = F::scale_words(blk);
    bias_words[r] = F::bias_words(blk);
    dup_lo[r] = _mm256_unpacklo_epi16(words[r], words[r]);  // pairs (w, w): words 0-3 | 8-11
    dup_hi[r] = _mm256_unpackhi_epi16(words[r], words[r]);  // words 4-7 | 12-15
    d[r] = F::d(blk);
    dmin[r] = F::dmin(blk);
  }
  for (int n = 0; n < 8; ++n) transpose_8x8_epi32(regs[n], out->q + 8 * n);
  // Transposed, register t lane r holds dword t of row r's vector: the (w, w) pairs of word
  // t (t < 4) or t + 4 from dup_lo, t + 4 or t + 8 from dup_hi; the plain words give pairs
  // (w 2k, w 2k + 1).
  __m256i lo[8], hi[8], pairs[8];
  transpose_8x8_epi32(dup_lo, lo);
  transpose_8x8_epi32(dup_hi, hi);
  transpose_8x8_epi32(bias_words, pairs);
  for (int s = 0; s < F::kSubs; ++s) out->sc[s] = (s & 4) == 0 ? lo[(s & 3) + (s >> 3) * 4] : hi[(s & 3) + (s >> 3) * 4];
  for (int k = 0; k < F::kBiasPairs; ++k) out->bias[k] = pairs[k];
  out->d = _mm256_load_ps(d);
  out->dmin = _mm256_load_ps(dmin);
}

// x rows [i0, i0 + MR) over the packed panel (nb super-blocks): the first n_valid outputs of
// each to y + i * ldy.
template <typename F, int MR>
void panel_rows(const Packed<F>* blocks, const Acts& a, int64_t i0, int64_t nb, float* y,
                int64_t ldy, int n_valid) {
  constexpr int kGroups = 64 / F::kSubs;  // 4-element groups per sub-block
  __m256 acc[MR];
  for (int i = 0; i < MR; ++i) acc[i] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const Packed<F>& blk = blocks[b];
    const int8_t* xb = a.q8_qs + i0 * a.cols + kQkK * b;
    __m256i tot[MR];
    for (int i = 0; i < MR; ++i) tot[i] = _mm256_setzero_si256();
    for (int s = 0; s < F::kSubs; ++s) {
      for (int c = 0; c < kGroups; c += F::kChain) {
        __m256i chain[MR];
        for (int t = 0; t < F::kChain; ++t) {
          const int g = s * kGroups + c + t;
          const __m256i w = _mm256_load_si256(&blk.q[g]);
          for (int i = 0; i < MR; ++i) {
            int32_t x4;
            std::memcpy(&x4, xb + i * a.cols + 4 * g, 4);
            const __m256i p = _mm256_maddubs_epi16(w, _mm256_set1_epi32(x4));
            chain[i] = t == 0 ? p : _mm256_add_epi16(chain[i], p);
          }
        }
        const __m256i sc = _mm256_load_si256(&blk.sc[s]);
        for (int i = 0; i < MR; ++i) tot[i] = _mm256_add_epi32(tot[i], _mm256_madd_epi16(chain[i], sc));
      }
    }
    for (int i = 0; i < MR; ++i) {
      alignas(32) int32_t xbias[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(xbias), F::x_bias(a.q8k_bsums + ((i0 + i) * nb + b) * 16));
      __m256i bias = _mm256_setzero_si256();
      for (int k = 0; k < F::kBiasPairs; ++k) {
        bias = _mm256_add_epi32(bias, _mm256_madd_epi16(_mm256_load_si256(&blk.bias[k]), _mm256_set1_epi32(xbias[k])));
      }
      if constexpr (!F::kMins) tot[i] = _mm256_sub_epi32(tot[i], _mm256_slli_epi32(bias, F::kOffsetShift));
      acc[i] = step8<F>(tot[i], bias, blk.d, blk.dmin, _mm256_set1_ps(a.q8k_d[(i0 + i) * nb + b]), acc[i]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    alignas(32) float out[kKPanel];
    _mm256_store_ps(out, acc[i]);
    std::memcpy(y + (i0 + i) * ldy, out, static_cast<size_t>(n_valid) * sizeof(float));
  }
}

// The rows routine of F: outputs [j0, j1) of every x row.
template <typename F>
void rows_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  const int64_t nb = a.cols / kQkK;
  const auto* base = static_cast<const uint8_t*>(w.data);
  const auto panel_rows_at = [&](int64_t j, int n_valid, const uint8_t* row[kKPanel]) {
    for (int r = 0; r < kKPanel; ++r) {  // past the end: repeat the last row, discard its lane
      row[r] = base + static_cast<uint64_t>(j + (r < n_valid ? r : n_valid - 1)) * w.row_bytes;
    }
  };
  if (a.m < kKGemmMinM) {
    const ThreadScratch scratch(kScratchKernelLanes, static_cast<size_t>(nb) * sizeof(RowPartials));
    auto* const parts = static_cast<RowPartials*>(scratch.data());
    for (int64_t j = j0; j < j1; j += kKPanel) {
      const int n_valid = static_cast<int>(j1 - j < kKPanel ? j1 - j : kKPanel);
      const uint8_t* row[kKPanel];
      panel_rows_at(j, n_valid, row);
      for (int64_t i = 0; i < a.m; ++i) {  // x rows after the first find the panel in L1 / L2
        float out[kKPanel];
        decode_panel<F>(row, a.q8_qs + i * a.cols, a.q8k_d + i * nb, a.q8k_bsums + i * nb * 16, nb, parts, out);
        std::memcpy(y + i * ldy + j, out, static_cast<size_t>(n_valid) * sizeof(float));
      }
    }
    return;
  }
  const ThreadScratch scratch(kScratchKernelPack, static_cast<size_t>(nb) * sizeof(Packed<F>));
  auto* const packed = static_cast<Packed<F>*>(scratch.data());
  for (int64_t j = j0; j < j1; j += kKPanel) {
    const int n_valid = static_cast<int>(j1 - j < kKPanel ? j1 - j : kKPanel);
    const uint8_t* row[kKPanel];
    panel_rows_at(j, n_valid, row);
    const auto ahead = static_cast<int64_t>(kKPanel * w.row_bytes);
    for (int64_t b = 0; b < nb; ++b) pack_block<F>(row, b, ahead, &packed[b]);
    int64_t i = 0;
    for (; i + kKMr <= a.m; i += kKMr) panel_rows<F, kKMr>(packed, a, i, nb, y + j, ldy, n_valid);
    switch (a.m - i) {
      case 1: panel_rows<F, 1>(packed, a, i, nb, y + j, ldy, n_valid); break;
      case 2: panel_rows<F, 2>(packed, a, i, nb, y + j, ldy, n_valid); break;
      case 3: panel_rows<F, 3>(packed, a, i, nb, y + j, ldy, n_valid); break;
      default: break;
    }
  }
}

}  // namespace
}  // namespace ridge::kernels::quant_avx2
