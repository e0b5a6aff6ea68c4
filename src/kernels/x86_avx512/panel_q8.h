// The AVX-512 VNNI panel matmul shared by the 32-element block formats (Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1) against Q8_0 / Q8_1 activations. Include only from x86_avx512/ files (AVX-512 flags);
// everything is in an anonymous namespace (no ISA-flagged copy can leak to other code).
//
// Layout: output rows are taken 16 at a time (a panel), one per 32-bit lane. For block b, a
// format's loader (`Format::load`) turns the panel's 16 x 32 quants into 8 registers, register g
// holding elements 4g..4g+3 of every row as unsigned bytes u = q + kOffset (q the signed quant
// of a symmetric format, or the unsigned quant of a format with a min, kOffset = 0), plus the 16
// block scales d (and mins m). vpdpbusd with the four activation bytes broadcast from memory
// then accumulates, in lane l, the dot of row l with x over the block; starting the integer sum at
// -kOffset * sum(x_b) (the quantizer's block sum) leaves the exact integer dot isum_b.
//
// The f32 accumulation, one lane per output row, block after block from 0:
//   acc = fma(float(isum_b), dw_b * dx_b, acc)            (ggml's d_w d_x isum)
//   acc = fma(mw_b, sx_b, acc)           formats with a min (ggml's m_w * s_x, s the Q8_1 term)
//   acc = acc + (dw_b * dx_b) * isum_b    MXFP4 (kRoundedStep: ggml's rule, product rounded)
// For Q8_0 this is the specification of kernels/ref/ref_q8_0.cpp exactly (bit-identical to ref);
// for the others it is ggml's per-block rule with the terms summed in this order. Either way
// each output depends only on its weight row and activation row: independent of m, tiling and
// threads (batch invariance).
//
// m <= 8 (decode) loads each block straight from the GGUF rows and uses it at once for all m
// rows; larger m (prefill) packs two panels' blocks into a buffer that every group of 6 x rows
// then reuses, each activation broadcast feeding 32 output rows; with AMX (amx_tiles.h) every
// group of 16 x rows takes its integer dots from the tiles instead, and the last m % 16 rows the
// vpdpbusd path.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/gather_halves.h"
#include "kernels/x86_avx512/amx_tiles.h"
#include "base/thread_scratch.h"
#include "kernels/matmul_driver.h"
#include "kernels/weight_layout.h"
#include "kernels/x86_avx512/quant_simd.h"

// Loaders are forced inline: called, they pass the block through memory (9-10 zmm stores and
// loads per block), which costs the decode loop more than the loads from the weight rows.
#define RIDGE_PANEL_INLINE inline __attribute__((always_inline))
#define RIDGE_PANEL_LAMBDA __attribute__((always_inline))

#ifndef RIDGE_PF_HINT
#define RIDGE_PF_HINT _MM_HINT_T1
#endif

namespace ridge::kernels::avx512 {
namespace {

constexpr int kPanel = 16;  // weight rows per panel (one per lane)
constexpr int kMr = 8;      // decode: up to 8 x rows share one loaded block

// One block of a panel as the kernel consumes it: 8 x 64 bytes of u, the 16 scales and, for
// formats with a min, the 16 mins.
template <bool kMin>
struct alignas(64) PanelBlock {
  __m512i w[8];
  __m512 d;
};
template <>
struct alignas(64) PanelBlock<true> {
  __m512i w[8];
  __m512 d;
  __m512 m;
};

// Block b of a panel's 16 rows straight from the GGUF rows, through Format::load(row, offset,
// out). A Format has kBlockBytes, kOffset, kMin, kPrefetchEvery (blocks per
// prefetched line, about 64 / kBlockBytes), kL2PrefetchStride (LayoutBlocks' step between L2
// prefetches), kL2PrefetchBytes (how far ahead of the block it reads a kPanels16 decode
// prefetches into L2) and load.
template <typename Format>
struct DirectBlocks {
  const uint8_t* row[kPanel];  // rows past the matrix repeat the last row (results discarded)
  int64_t prefetch_ahead = 0;  // bytes from a row to the same row of the next panel

  RIDGE_PANEL_INLINE void load(int64_t b, PanelBlock<Format::kMin>* out) const {
    const int64_t off = b * Format::kBlockBytes;
    // The panel's 16 rows are one contiguous region read column-wise, a pattern the hardware
    // prefetcher does not follow; so the same lines of the next panel are prefetched while this
    // one is read (one line per row about every 64 bytes of row), a whole panel ahead.
    if (prefetch_ahead != 0 && b % Format::kPrefetchEvery == 0) {
      for (int r = 0; r < kPanel; ++r) {
        _mm_prefetch(reinterpret_cast<const char*>(row[r] + off) + prefetch_ahead, RIDGE_PF_HINT);
      }
    }
    Format::load(row, off, out);
  }
};

// Block b of a panel stored in the kPanels16 layout (kernels/weight_layout.h): the panel's
// blocks (kPanel x kBlockBytes each) follow each other in one sequential stream, each read by
// Format::load_layout(block, out) with its fields already transposed to one row per lane.
template <typename Format>
struct LayoutBlocks {
  const uint8_t* base;         // the panel's block 0
  int64_t prefetch_ahead = 0;  // bytes ahead of each block to prefetch into L2 (and see prefetch_stream)
  RIDGE_PANEL_INLINE void load(int64_t b, PanelBlock<Format::kMin>* out) const {
    constexpr int64_t kBytes = kPanel * Format::kBlockBytes;
    const uint8_t* p = base + b * kBytes;
    quant_avx512::prefetch_stream(p, prefetch_ahead, kBytes, Format::kL2PrefetchStride);
    Format::load_layout(p, out);
  }
};

template <bool kMin>
struct PackedBlocks {
  const PanelBlock<kMin>* blocks;
  RIDGE_PANEL_INLINE void load(int64_t b, PanelBlock<kMin>* out) const { *out = blocks[b]; }
};

// The 16-bit / 32-bit field at byte `at` of each row's block (lane r: row r), assembled in
// general registers (gather_halves.h), whose loads and shifts run on ports the vector work
// leaves idle.
RIDGE_PANEL_INLINE __m512 load_halves(const uint8_t* const* row, int64_t at) {
  uint64_t q[4];
  gather_halves(row, at, q);
  const __m256i v = _mm256_set_epi64x(static_cast<long long>(q[3]), static_cast<long long>(q[2]),
                                      static_cast<long long>(q[1]), static_cast<long long>(q[0]));
  return _mm512_cvtph_ps(v);
}

RIDGE_PANEL_INLINE __m512i load_dwords(const uint8_t* const* row, int64_t at) {
  uint64_t q[8];
  for (int k = 0; k < 8; ++k) {
    uint32_t lo, hi;
    std::memcpy(&lo, row[2 * k] + at, 4);
    std::memcpy(&hi, row[2 * k + 1] + at, 4);
    q[k] = lo | static_cast<uint64_t>(hi) << 32;
  }
  auto ll = [](uint64_t v) { return static_cast<long long>(v); };
  return _mm512_set_epi64(ll(q[7]), ll(q[6]), ll(q[5]), ll(q[4]), ll(q[3]), ll(q[2]), ll(q[1]),
                          ll(q[0]));
}

// acc += dot(w bytes (unsigned), 4 bytes at p broadcast (signed)) per 32-bit lane. GCC does not
// fold the broadcast into vpdpbusd's memory operand ({1to16}); a separate vpbroadcastd costs a
// vector uop per dot instruction, so the instruction is written out.
inline __m512i dpbusd_bcst(__m512i acc, __m512i w, const int8_t* p) {
  using Unaligned32 = int32_t __attribute__((may_alias, aligned(1)));
  __asm__("vpdpbusd %2%{1to16%}, %1, %0"
          : "+v"(acc)
          : "v"(w), "m"(*reinterpret_cast<const Unaligned32*>(p)));
  return acc;
}

// v as an opaque value: what reaches the next operation is the rounded product, not a multiply
// the compiler may fuse into a following add (GCC contracts by default where FMA exists).
RIDGE_PANEL_INLINE __m512 rounded(__m512 v) {
  __asm__("" : "+v"(v));
  return v;
}

// Whether a format's f32 step rounds the product before the add (Format::kRoundedStep, MXFP4 as
// ggml computes it) instead of the fma of the others.
template <typename Format>
constexpr bool rounded_step() {
  if constexpr (requires { Format::kRoundedStep; }) {
    return Format::kRoundedStep;
  } else {
    return false;
  }
}

// The f32 step of one block (see the top of the file); the same ops in decode and prefill.
// dx: the activation block's scale, broadcast; xs: its Q8_1 term s (formats with a min).
template <typename Format>
RIDGE_PANEL_INLINE __m512 block_step(__m512 acc, __m512i isum, const PanelBlock<Format::kMin>& blk,
                                     __m512 dx, float xs) {
  if constexpr (rounded_step<Format>()) {  // acc + (d_w d_x) * isum, two roundings
    return _mm512_add_ps(acc, rounded(_mm512_mul_ps(_mm512_mul_ps(blk.d, dx), _mm512_cvtepi32_ps(isum))));
  }
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(blk.d, dx), acc);
  if constexpr (Format::kMin) acc = _mm512_fmadd_ps(blk.m, _mm512_set1_ps(xs), acc);
  return acc;
}

// The integer sum's start: -kOffset * sum(x_b) (0 for the formats with a min).
template <typename Format>
RIDGE_PANEL_INLINE __m512i isum_start(const int32_t* xsum) {
  if constexpr (Format::kOffset == 0) {
    return _mm512_setzero_si512();
  } else {
    return _mm512_set1_epi32(-Format::kOffset * *xsum);
  }
}

// Row i0's per-block activation terms (pointers hoisted out of the block loops).
struct ActBlocks {
  const float* d;
  const int32_t* sum;
  const float* s;  // Q8_1 term; null for Q8_0 activations
  ActBlocks(const Acts& a, int64_t i0, int64_t nb)
      : d(a.q8_d + i0 * nb), sum(a.q8_sum + i0 * nb), s(a.q8_s ? a.q8_s + i0 * nb : nullptr) {}
  // s of block k (from row i0), read only by the formats with a min.
  template <bool kMin>
  RIDGE_PANEL_INLINE float s_at(int64_t k) const {
    if constexpr (kMin) {
      return s[k];
    } else {
      return 0.0f;
    }
  }
};

// acc[i] (16 output rows) for MR x rows starting at x row i0; stores the `valid` lanes.
template <typename Format, int MR, typename Blocks>
void panel_rows(const Blocks& src, const Acts& a, int64_t i0, int64_t nb, float* y, int64_t ldy,
                __mmask16 valid) {
  __m512 acc[MR];
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  const int8_t* xq = a.q8_qs + i0 * a.cols;
  const ActBlocks x(a, i0, nb);
  for (int64_t b = 0; b < nb; ++b) {
    PanelBlock<Format::kMin> blk;
    src.load(b, &blk);
    // g outer, i inner: MR independent vpdpbusd chains in flight instead of one serial chain;
    // with few rows, a second chain per row (g >= 4), added at the end (integers: exact).
    constexpr int kChains = MR >= 4 ? 1 : 2;
    __m512i isum[kChains][MR];
    for (int i = 0; i < MR; ++i) {
      isum[0][i] = isum_start<Format>(x.sum + i * nb + b);
      if (kChains == 2) isum[kChains - 1][i] = _mm512_setzero_si512();
    }
    for (int g = 0; g < 8; ++g) {
      const int c = kChains == 2 && g >= 4 ? 1 : 0;
      for (int i = 0; i < MR; ++i) {
        isum[c][i] = dpbusd_bcst(isum[c][i], blk.w[g], xq + i * a.cols + b * 32 + 4 * g);
      }
    }
    if (kChains == 2) {
      for (int i = 0; i < MR; ++i) isum[0][i] = _mm512_add_epi32(isum[0][i], isum[kChains - 1][i]);
    }
    for (int i = 0; i < MR; ++i) {
      const __m512 dx = _mm512_set1_ps(x.d[i * nb + b]);
      const float xs = x.s_at<Format::kMin>(i * nb + b);
      acc[i] = block_step<Format>(acc[i], isum[0][i], blk, dx, xs);
    }
  }
  for (int i = 0; i < MR; ++i) _mm512_mask_storeu_ps(y + (i0 + i) * ldy, valid, acc[i]);
}

// x rows [i, m) over one panel.
template <typename Format, typename Blocks>
void panel_all_rows(const Blocks& src, const Acts& a, int64_t nb, float* y, int64_t ldy,
                    __mmask16 valid, int64_t i = 0) {
  for (; i + kMr <= a.m; i += kMr) panel_rows<Format, kMr>(src, a, i, nb, y, ldy, valid);
  switch (a.m - i) {
    case 1: return panel_rows<Format, 1>(src, a, i, nb, y, ldy, valid);
    case 2: return panel_rows<Format, 2>(src, a, i, nb, y, ldy, valid);
    case 3: return panel_rows<Format, 3>(src, a, i, nb, y, ldy, valid);
    case 4: return panel_rows<Format, 4>(src, a, i, nb, y, ldy, valid);
    case 5: return panel_rows<Format, 5>(src, a, i, nb, y, ldy, valid);
    case 6: return panel_rows<Format, 6>(src, a, i, nb, y, ldy, valid);
    case 7: return panel_rows<Format, 7>(src, a, i, nb, y, ldy, valid);
    default: return;
  }
}

// The prefill micro-kernel: two packed panels (32 output rows) against MR x rows, so that each
// activation broadcast feeds two vpdpbusd (the broadcast costs a vector uop of its own). Per
// lane it performs exactly the operations of panel_rows: the same bits.
constexpr int kWideMr = 6;  // 6 x (2 isum + 2 acc) + 2 weights + broadcast + 2 scales <= 32 regs

template <typename Format, int MR>
void wide_rows(const PanelBlock<Format::kMin>* p0, const PanelBlock<Format::kMin>* p1,
               const Acts& a, int64_t i0, int64_t nb, float* y, int64_t ldy, __mmask16 valid0,
               __mmask16 valid1) {
  __m512 acc[MR][2];
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  const int8_t* xq = a.q8_qs + i0 * a.cols;
  const ActBlocks x(a, i0, nb);
  for (int64_t b = 0; b < nb; ++b) {
    __m512i isum[MR][2];
    for (int i = 0; i < MR; ++i) {
      isum[i][0] = isum[i][1] = isum_start<Format>(x.sum + i * nb + b);
    }
    for (int g = 0; g < 8; ++g) {
      const __m512i w0 = _mm512_load_si512(&p0[b].w[g]);
      const __m512i w1 = _mm512_load_si512(&p1[b].w[g]);
      for (int i = 0; i < MR; ++i) {
        int32_t x4;
        std::memcpy(&x4, xq + i * a.cols + b * 32 + 4 * g, 4);
        const __m512i xb = _mm512_set1_epi32(x4);
        isum[i][0] = _mm512_dpbusd_epi32(isum[i][0], w0, xb);
        isum[i][1] = _mm512_dpbusd_epi32(isum[i][1], w1, xb);
      }
    }
    for (int i = 0; i < MR; ++i) {
      const __m512 dx = _mm512_set1_ps(x.d[i * nb + b]);
      const float xs = x.s_at<Format::kMin>(i * nb + b);
      acc[i][0] = block_step<Format>(acc[i][0], isum[i][0], p0[b], dx, xs);
      acc[i][1] = block_step<Format>(acc[i][1], isum[i][1], p1[b], dx, xs);
    }
  }
  for (int i = 0; i < MR; ++i) {
    _mm512_mask_storeu_ps(y + (i0 + i) * ldy, valid0, acc[i][0]);
    _mm512_mask_storeu_ps(y + (i0 + i) * ldy + kPanel, valid1, acc[i][1]);
  }
}

// x rows [i, m) over two packed panels.
template <typename Format>
void wide_all_rows(const PanelBlock<Format::kMin>* p0, const PanelBlock<Format::kMin>* p1,
                   const Acts& a, int64_t nb, float* y, int64_t ldy, __mmask16 valid0,
                   __mmask16 valid1, int64_t i = 0) {
  for (; i + kWideMr <= a.m; i += kWideMr) {
    wide_rows<Format, kWideMr>(p0, p1, a, i, nb, y, ldy, valid0, valid1);
  }
  switch (a.m - i) {
    case 1: return wide_rows<Format, 1>(p0, p1, a, i, nb, y, ldy, valid0, valid1);
    case 2: return wide_rows<Format, 2>(p0, p1, a, i, nb, y, ldy, valid0, valid1);
    case 3: return wide_rows<Format, 3>(p0, p1, a, i, nb, y, ldy, valid0, valid1);
    case 4: return wide_rows<Format, 4>(p0, p1, a, i, nb, y, ldy, valid0, valid1);
    case 5: return wide_rows<Format, 5>(p0, p1, a, i, nb, y, ldy, valid0, valid1);
    default: return;
  }
}


// The activation terms of x rows in groups of 16, block-major so that one pointer reaches all 16
// rows' terms of a block: d[(g nb + b) 16 + i] = row 16 g + i's scale of block b (s likewise,
// formats with a min). Built once per rows call for all its panels.
struct AmxActs {
  float* d = nullptr;
  float* s = nullptr;
  AmxActs(const Acts& a, int64_t m_amx, int64_t nb, float* buffer) : d(buffer) {
    if (a.q8_s != nullptr) s = buffer + m_amx * nb;
    for (int64_t i = 0; i < m_amx; ++i) {
      const int64_t g = i / kAmxRows, r = i % kAmxRows;
      for (int64_t b = 0; b < nb; ++b) {
        d[(g * nb + b) * kAmxRows + r] = a.q8_d[i * nb + b];
        if (s != nullptr) s[(g * nb + b) * kAmxRows + r] = a.q8_s[i * nb + b];
      }
    }
  }
  static size_t floats(const Acts& a, int64_t m_amx, int64_t nb) {
    return static_cast<size_t>((a.q8_s != nullptr ? 2 : 1) * m_amx * nb);
  }
};

// Block b's f32 steps for 16 x rows from the tile's integer dots c; xd / xs: the 16 rows' terms of
// the block (AmxActs).
template <typename Format>
RIDGE_PANEL_INLINE void amx_finish(__m512 (&acc)[kAmxRows], const int32_t (*c)[16],
                                   const PanelBlock<Format::kMin>& blk, const float* xd,
                                   const float* xs) {
  for (int i = 0; i < kAmxRows; ++i) {
    const __m512i isum = _mm512_load_si512(c[i]);
    acc[i] = block_step<Format>(acc[i], isum, blk, _mm512_set1_ps(xd[i]), Format::kMin ? xs[i] : 0.0f);
  }
}

// The quants of a packed panel's blocks made signed for the tiles: q = u - kOffset (amx_tiles.h).
// Formats with a min (kOffset 0, quants below 32) are read from the packed blocks as they are.
template <typename Format>
void amx_signed_quants(const PanelBlock<Format::kMin>* p, int64_t nb, __m512i (*out)[8]) {
  const __m512i offset = _mm512_set1_epi8(static_cast<char>(Format::kOffset));
  for (int64_t b = 0; b < nb; ++b) {
    for (int g = 0; g < 8; ++g) out[b][g] = _mm512_sub_epi8(p[b].w[g], offset);
  }
}

// 16 x rows from i0 over one packed panel p on the AMX tiles (amx_tiles.h; the caller has loaded
// the configuration for 32-byte blocks), q its signed quants (amx_signed_quants; unused for
// kOffset 0). Per block, the
// tile unit's exact integer dots, then block_step: per lane the operations of panel_rows, the
// same bits.
template <typename Format>
void amx_rows(const PanelBlock<Format::kMin>* p, const __m512i (*q)[8], const Acts& a,
              const AmxActs& terms, int64_t i0, int64_t nb, float* y, int64_t ldy,
              __mmask16 valid) {
  __m512 acc[kAmxRows];
  for (int i = 0; i < kAmxRows; ++i) acc[i] = _mm512_setzero_ps();
  const int8_t* xq = a.q8_qs + i0 * a.cols;
  const float* xd = terms.d + i0 * nb;  // block b's 16 terms at xd + 16 b (AmxActs)
  const float* xs = terms.s != nullptr ? terms.s + i0 * nb : terms.d;  // read by formats with a min only
  amx_pipeline(
      nb, a.cols, [&](int64_t b) { return xq + b * 32; },
      [&](int64_t b) -> const void* {
        if constexpr (Format::kOffset == 0) {
          return p[b].w;
        } else {
          return q[b];
        }
      },
      [&](const TileDots& c, int64_t b) RIDGE_PANEL_LAMBDA {
        amx_finish<Format>(acc, c, p[b], xd + kAmxRows * b, xs + kAmxRows * b);
      });
  for (int i = 0; i < kAmxRows; ++i) _mm512_mask_storeu_ps(y + (i0 + i) * ldy, valid, acc[i]);
}

// The panel of 16 rows starting at j (rows past j1 repeat the last valid row).
template <typename Format>
DirectBlocks<Format> panel_at(const WeightView& w, int64_t j, int64_t j1) {
  const auto* base = static_cast<const uint8_t*>(w.data);
  const int64_t n_valid = j1 - j < kPanel ? j1 - j : kPanel;
  DirectBlocks<Format> direct;
  for (int r = 0; r < kPanel; ++r) {
    const int64_t row = j + (r < n_valid ? r : n_valid - 1);
    direct.row[r] = base + static_cast<uint64_t>(row) * w.row_bytes;
  }
  direct.prefetch_ahead = static_cast<int64_t>(kPanel * w.row_bytes);
  return direct;
}

inline __mmask16 valid_mask(int64_t j, int64_t j1) {
  const int64_t n = j1 - j < kPanel ? j1 - j : kPanel;
  return n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1u);
}

// Output rows [j0, j1) from the panels source_at(j) gives (a Blocks source for the panel of
// rows j .. j + 15; see DirectBlocks, LayoutBlocks).
template <typename Format, typename SourceAt>
void panel_rows_from(const SourceAt& source_at, const Acts& a, int64_t j0, int64_t j1, float* y,
                     int64_t ldy) {
  const int64_t nb = a.cols / 32;
  if (a.m <= kMr) {  // decode: load each block in registers, stream the weights once
    for (int64_t j = j0; j < j1; j += kPanel) {
      panel_all_rows<Format>(source_at(j), a, nb, y + j, ldy, valid_mask(j, j1));
    }
    return;
  }
  // Prefill: pack two panels, then run every x row over them (groups of 16 on the AMX tiles
  // where they are on, the rest through vpdpbusd).
  using Block = PanelBlock<Format::kMin>;
  const ThreadScratch buffer(kScratchKernelPack, static_cast<size_t>(2 * nb) * sizeof(Block));
  Block* p0 = static_cast<Block*>(buffer.data());
  Block* p1 = p0 + nb;
  const int64_t m_amx = amx_row_count(a.m);
  const AmxTiles tiles(32, m_amx > 0);
  const bool copy_signed = m_amx > 0 && Format::kOffset != 0;
  const ThreadScratch signed_buffer(kScratchKernelAmx, copy_signed ? static_cast<size_t>(2 * nb) * 512 : 0);
  auto* const q0 = static_cast<__m512i(*)[8]>(signed_buffer.data());
  auto* const q1 = q0 + nb;
  const ThreadScratch terms_buffer(kScratchKernelTables, AmxActs::floats(a, m_amx, nb) * sizeof(float));
  const AmxActs terms(a, m_amx, nb, static_cast<float*>(terms_buffer.data()));
  for (int64_t j = j0; j < j1; j += 2 * kPanel) {
    const bool two = j + kPanel < j1;
    const auto d0 = source_at(j);
    for (int64_t b = 0; b < nb; ++b) d0.load(b, &p0[b]);
    if (two) {
      const auto d1 = source_at(j + kPanel);
      for (int64_t b = 0; b < nb; ++b) d1.load(b, &p1[b]);
    }
    const __mmask16 valid0 = valid_mask(j, j1), valid1 = valid_mask(j + kPanel, j1);
    if (copy_signed) {
      amx_signed_quants<Format>(p0, nb, q0);
      if (two) amx_signed_quants<Format>(p1, nb, q1);
    }
    for (int64_t i = 0; i < m_amx; i += kAmxRows) {
      amx_rows<Format>(p0, q0, a, terms, i, nb, y + j, ldy, valid0);
      if (two) amx_rows<Format>(p1, q1, a, terms, i, nb, y + j + kPanel, ldy, valid1);
    }
    if (two) {
      wide_all_rows<Format>(p0, p1, a, nb, y + j, ldy, valid0, valid1, m_amx);
    } else {
      panel_all_rows<Format>(PackedBlocks<Format::kMin>{p0}, a, nb, y + j, ldy, valid0, m_amx);
    }
  }
}

// The rows routine of a format (MatmulRowsFn; row grain kPanel): weights in kRows, or in
// kPanels16, whose full panels stream sequentially through Format::load_layout (the last
// rows % 16 rows are kRows). Either way the same loaded blocks, so the same bits.
template <typename Format>
void panel_matmul_rows(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y,
                       int64_t ldy) {
  const auto rows_at = [&](int64_t j) { return panel_at<Format>(w, j, j1); };
  if (w.layout != WeightLayout::kPanels16) return panel_rows_from<Format>(rows_at, a, j0, j1, y, ldy);
  const auto* base = static_cast<const uint8_t*>(w.data);
  split_panels16(
      w, j0, j1,
      [&](int64_t p0, int64_t p1, uint64_t panel_bytes) {
        const auto layout_at = [&](int64_t j) {
          return LayoutBlocks<Format>{base + static_cast<uint64_t>(j / kPanel) * panel_bytes, Format::kL2PrefetchBytes};
        };
        panel_rows_from<Format>(layout_at, a, p0, p1, y, ldy);
      },
      [&](int64_t r0, int64_t r1) { panel_rows_from<Format>(rows_at, a, r0, r1, y, ldy); });
}

}  // namespace
}  // namespace ridge::kernels::avx512
