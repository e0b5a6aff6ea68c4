// The panel GEMM shared by the AVX-512 K-format kernels (kquant_q23k.cpp: Q2_K, Q3_K;
// kquant_q45k.cpp: Q4_K, Q5_K; kquant_q6k.cpp: Q6_K; kquant_iq4xs.cpp and kquant_grid.cpp the
// other 256-element formats), in the style of q8_0.cpp. Include only
// from files compiled with the AVX-512 flags (internal linkage).
//
// Layout. Output rows are taken 16 at a time (a panel), one per 32-bit lane. A panel's super-block
// b is unpacked once (Format::pack) into a `Packed` block: per sub-block s and 4-element group t
// one register whose lane r holds the 4 quants of row r as unsigned bytes, the sub-block scales as
// int32 lanes, the super-block scales as f32 lanes (plus, for Q2_K / Q4_K / Q5_K, the mins as int16
// pairs). step() then streams activation rows over it: per sub-block, vpdpbusd of the quants with
// the activation's 4 bytes broadcast gives each lane's exact integer partial; it is multiplied by
// the lane's scale (vpmulld) and summed into the super-block total (exact int32: |total| < 2^28).
//
// Weights come in GGUF's rows (a Panel: the fields are transposed on the fly) or in kPanels16
// (weight_layout.h: a LayoutPanel, whose registers are plain loads; the engine's choice for every
// K format and IQ4_XS).
//
// Canonical order (batch invariance, matmul_driver.h). Every output y[i][j] is, per super-block
// in order, acc = Format::finish(acc, integer totals of (row j, x row i, block b)), the same few
// f32 vector operations in lane j whatever the number of x rows, panels and threads. Decode
// (m <= kDirectRows) of a kPanels16 panel goes through F::layout_step, which feeds each loaded
// register to vpdpbusd at once; of a kRows panel it packs one super-block at a time into a stack
// block and runs all m rows over it (one pass over the weights, the next panel prefetched into
// L2). Prefill packs two whole panels into a buffer that every group of kMr x rows then reuses
// (each broadcast feeds both panels). A kRows matrix may instead take m = 1 row by row
// (F::kRowDecode: Q5_K and Q6_K, whose transposing unpack costs more than their memory stream)
// if it reduces to the same integer totals and then runs the same f32 step over the panel's
// lanes. Same integers, same float operations: the same bits.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "base/check.h"
#include "base/thread_scratch.h"
#include "kernels/matmul_driver.h"
#include "kernels/weight_layout.h"
#include "kernels/x86_avx512/amx_tiles.h"
#include "kernels/x86_avx512/quant_simd.h"

// A decode step (F::layout_step) is inlined into its panel's loop over super-blocks
// (RIDGE_STEP_INLINE) and its loops, whose trip counts are constants, fully unrolled
// (RIDGE_UNROLL): GCC 12 had left each step a call per super-block, with its scale registers
// spilled to the stack and its loops kept as branches (docs/tuning.md, "Inlined K-format steps").
#define RIDGE_STEP_INLINE __attribute__((always_inline))
#define RIDGE_UNROLL _Pragma("GCC unroll 16")

namespace ridge::kernels::kquant_avx512 {
namespace {

constexpr int kPanel = 16;          // weight rows per panel (one per lane)
constexpr int64_t kSuperBlock = 256;
constexpr int kMr = 4;              // x rows per prefill micro-kernel (2 panels x 4 rows; 6 was no faster)
constexpr int64_t kDirectRows = 4;  // m up to this: decode path (one super-block at a time)
// How far ahead a decode over kPanels16 prefetches into L2. A core needs more bytes in flight the
// faster it reads; 8 KiB is the best distance on the machine the targets are set on (docs/tuning.md,
// "L2 prefetch distances").
constexpr int64_t kLayoutPrefetchBytes = 8192;

// The 16 rows of a panel (rows past the matrix repeat the last one; their results are masked).
struct Panel {
  const uint8_t* row[kPanel];
  __m512i offsets;             // byte offset of each row from row[0] (gathers)
  int64_t prefetch_ahead = 0;  // bytes from a row to the same row of the next panel (0: none)
};

inline Panel panel_at(const WeightView& w, int64_t j, int64_t j1) {
  const auto* base = static_cast<const uint8_t*>(w.data);
  const int64_t n_valid = j1 - j < kPanel ? j1 - j : kPanel;
  Panel p;
  alignas(64) int32_t offsets[kPanel];
  for (int r = 0; r < kPanel; ++r) {
    const int64_t row = j + (r < n_valid ? r : n_valid - 1);
    p.row[r] = base + static_cast<uint64_t>(row) * w.row_bytes;
    offsets[r] = static_cast<int32_t>(static_cast<uint64_t>(row - j) * w.row_bytes);
  }
  p.offsets = _mm512_load_si512(offsets);
  p.prefetch_ahead = static_cast<int64_t>(kPanel * w.row_bytes);
  return p;
}

// A panel of a kPanels16 matrix (kernels/weight_layout.h): its blocks, each kPanel x the row
// block's bytes, one after another.
struct LayoutPanel {
  const uint8_t* base;         // block 0 of the panel
  int64_t prefetch_ahead = 0;  // bytes ahead of each block to prefetch into L2 (0: none)
};

// Super-block b of a LayoutPanel (kBlockBytes per row): the base of every format's LayoutSource.
// The stream's prefetch (p.prefetch_ahead on into L2, kStreamL1Ahead on into L1) is asked for a
// quarter of the super-block's bytes at a time: a decode step calls prefetch_quarter(0..3) at four
// points spread through its loop, the pack for prefill prefetch_all() once: one burst of all of a
// super-block's requests before its loads starved the loads on some cores (docs/decode.md, "The
// prefetch in quarters").
template <int64_t kBlockBytes>
struct LayoutBlock {
  static constexpr int64_t kQuarterBytes = kPanel * kBlockBytes / 4;
  const uint8_t* blk;
  int64_t prefetch_ahead;
  LayoutBlock(const LayoutPanel& p, int64_t b) : blk(p.base + b * kPanel * kBlockBytes), prefetch_ahead(p.prefetch_ahead) {}
  RIDGE_STEP_INLINE void prefetch_quarter(int q) const {
    if (prefetch_ahead != 0) quant_avx512::prefetch_stream(blk + q * kQuarterBytes, prefetch_ahead, kQuarterBytes);
  }
  void prefetch_all() const {
    if (prefetch_ahead != 0) quant_avx512::prefetch_stream(blk, prefetch_ahead, 4 * kQuarterBytes);
  }
};

inline __mmask16 valid_mask(int64_t j, int64_t j1) {
  const int64_t n = j1 - j < kPanel ? j1 - j : kPanel;
  return n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1u);
}

// out[t] lane r = the 4 bytes at row[r] + off + 4t, t < 8 (a 16 x 8 dword transpose).
inline void transpose_32(const Panel& p, int64_t off, __m512i out[8]) {
  __m512i z[8];  // z[r] = [row r (8 dwords) | row r + 8]
  for (int r = 0; r < 8; ++r) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.row[r] + off));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.row[r + 8] + off));
    z[r] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
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
  // 128-bit lane L of u[g] (g < 4) holds dword g (L even) or g + 4 (L odd) of rows 0-3 (L < 2)
  // or 8-11; u[g + 4] the same for rows 4-7 / 12-15.
  const __m512i lo_idx = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i hi_idx = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  for (int g = 0; g < 4; ++g) {
    out[g] = _mm512_permutex2var_epi64(u[g], lo_idx, u[g + 4]);
    out[g + 4] = _mm512_permutex2var_epi64(u[g], hi_idx, u[g + 4]);
  }
}

// out[k] lane r = the 4 bytes at row[r] + off + 4k, k < 4 (a 16 x 4 dword transpose; the 16
// bytes must lie inside the row).
inline void transpose_16(const Panel& p, int64_t off, __m512i out[4]) {
  __m512i z[4];  // z[q] = [row q | row q + 4 | row q + 8 | row q + 12]
  for (int q = 0; q < 4; ++q) {
    z[q] = quant_avx512::load_4x128(p.row[q] + off, p.row[q + 4] + off, p.row[q + 8] + off,
                                    p.row[q + 12] + off);
  }
  const __m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]), t1 = _mm512_unpackhi_epi32(z[0], z[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]), t3 = _mm512_unpackhi_epi32(z[2], z[3]);
  out[0] = _mm512_unpacklo_epi64(t0, t2);  // dword 4 L + q: row q + 4 L
  out[1] = _mm512_unpackhi_epi64(t0, t2);
  out[2] = _mm512_unpacklo_epi64(t1, t3);
  out[3] = _mm512_unpackhi_epi64(t1, t3);
}

// Lane r = the 4 bytes at row[r] + off (off + 4 must stay inside the row).
inline __m512i gather_dword(const Panel& p, int64_t off) {
  return _mm512_i32gather_epi32(p.offsets, p.row[0] + off, 1);
}

// Prefetches into L2 (T1: T0 is much slower here, docs/decode.md) the next panel's copy of
// bytes [off, off + n) of every row, a block of a row: one line per 64 bytes (the next block's
// first prefetch covers a partial last line).
inline void prefetch_next(const Panel& p, int64_t off, int64_t n) {
  if (p.prefetch_ahead == 0) return;
  for (int r = 0; r < kPanel; ++r) {
    const char* q = reinterpret_cast<const char*>(p.row[r] + off + p.prefetch_ahead);
    for (int64_t k = 0; k < n; k += 64) _mm_prefetch(q + k, _MM_HINT_T1);
  }
}

// acc += dot(w bytes (unsigned), 4 bytes at p broadcast (signed)) per lane, the broadcast folded
// into the instruction (GCC does not fold _mm512_set1_epi32 into vpdpbusd's {1to16} operand).
inline __m512i dpbusd_bcst(__m512i acc, __m512i w, const int8_t* p) {
  using Unaligned32 = int32_t __attribute__((may_alias, aligned(1)));
  __asm__("vpdpbusd %2%{1to16%}, %1, %0"
          : "+v"(acc)
          : "v"(w), "m"(*reinterpret_cast<const Unaligned32*>(p)));
  return acc;
}

inline __m512i bcst32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// The activations as the kernels read them: Q8_K quants and scales (Acts) plus one int32 per
// (row, block, slot) prepared once per rows call (Format::prepare_extra): Q4_K / Q5_K the mins'
// pair sums (4 slots: int16 pairs), Q6_K -32 * bsum of each sub-block (16 slots).
struct KActs {
  const int8_t* q = nullptr;  // [m, cols]
  const float* d = nullptr;   // [m, nb]
  int32_t* extra = nullptr;   // [m, nb, kExtra]
  int64_t cols = 0, nb = 0;
};

// The canonical float steps of one super-block (every path, every lane). Formats with mins
// (Q2_K, Q4_K, Q5_K): acc = fma(fmsub(float(isum), d, float(msum) * dmin), dx, acc); without
// (Q3_K, Q6_K): acc = fma(float(isum), d * dx, acc).
inline __m512 float_step_min(__m512i isum, __m512i msum, __m512 d, __m512 dmin, float dx, __m512 acc) {
  const __m512 v = _mm512_fmsub_ps(_mm512_cvtepi32_ps(isum), d, _mm512_mul_ps(_mm512_cvtepi32_ps(msum), dmin));
  return _mm512_fmadd_ps(v, _mm512_set1_ps(dx), acc);
}
inline __m512 float_step(__m512 d, float dx, __m512i isum, __m512 acc) {
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, _mm512_set1_ps(dx)), acc);
}

// The last step of formats with mins (Q2_K: 8 int16 pairs of mins per lane, Q4_K / Q5_K: 4):
// msum from the lanes' mins pairs against the x pair sums prepare_extra put in extra (kPairs per
// block), then float_step_min.
template <int kPairs>
inline __m512 finish_with_mins(const __m512i* mins, __m512 d, __m512 dmin, const KActs& x, int64_t i,
                               int64_t b, __m512i isum, __m512 acc) {
  const int32_t* pairs = x.extra + (i * x.nb + b) * kPairs;
  __m512i msum = _mm512_setzero_si512();
  for (int t = 0; t < kPairs; ++t) msum = _mm512_dpwssd_epi32(msum, mins[t], bcst32(pairs + t));
  return float_step_min(isum, msum, d, dmin, x.d[i * x.nb + b], acc);
}

// The 16 qs registers of a kRows super-block (16 rows, one per lane) at byte kQsAt of a block of
// kBlockBytes, transposed once at construction: the shared part of Q2_K's and Q3_K's RowsSource.
template <int64_t kQsAt, int64_t kBlockBytes>
struct QsRows {
  const Panel& p;
  int64_t off;
  __m512i regs[16];
  QsRows(const Panel& panel, int64_t b) : p(panel), off(b * kBlockBytes) {
    prefetch_next(p, off, kBlockBytes);
    transpose_32(p, off + kQsAt, regs);
    transpose_32(p, off + kQsAt + 32, regs + 8);
  }
  __m512i qs(int g) const { return regs[g]; }
};

// For formats whose quants are stored with an offset (value = q + kOffset: Q3_K -4, Q6_K -32):
// extra[(i nb + b) 16 + s] = kOffset * bsum_s, where sub-block s's vpdpbusd chain starts, so the
// chain ends at the exact dot(q + kOffset, x_s).
template <int kOffset>
struct OffsetChains {
  static constexpr int kQuantOffset = kOffset;  // the signed quants (AMX path): q + kOffset
  static constexpr int kExtra = 16;
  static void prepare_extra(const Acts& a, const KActs& x) {
    for (int64_t k = 0; k < a.m * x.nb * 16; ++k) x.extra[k] = kOffset * a.q8k_bsums[k];
  }
  static __m512i part_init(const KActs& x, int64_t i, int64_t b, int s) {
    return bcst32(x.extra + (i * x.nb + b) * 16 + s);
  }
};

// One super-block b of NP panels (p[k]) against x rows i0 .. i0 + MR - 1, accumulated into
// acc[i][k]. Per lane, the operations do not depend on NP or MR.
template <typename F, int NP, int MR>
inline void step(const typename F::Packed* const* p, const KActs& x, int64_t i0, int64_t b,
                 __m512 (&acc)[MR][NP]) {
  constexpr int kG = F::kGroups;
  __m512i tot[MR][NP];
  for (int i = 0; i < MR; ++i) {
    for (int k = 0; k < NP; ++k) tot[i][k] = _mm512_setzero_si512();
  }
  const int8_t* xb = x.q + i0 * x.cols + kSuperBlock * b;
  for (int s = 0; s < F::kSubs; ++s) {
    __m512i part[MR][NP];
    for (int i = 0; i < MR; ++i) {
      const __m512i init = F::part_init(x, i0 + i, b, s);
      for (int k = 0; k < NP; ++k) part[i][k] = init;
    }
    // With few rows, a second vpdpbusd chain per row (odd groups) against the latency, added
    // before the scale (integers: the same total).
    constexpr bool kTwoChains = NP * MR <= 2;
    __m512i part2[MR][NP];
    for (int i = 0; i < MR; ++i) {
      for (int k = 0; k < NP; ++k) part2[i][k] = _mm512_setzero_si512();
    }
    for (int t = 0; t < kG; ++t) {
      __m512i w[NP];
      for (int k = 0; k < NP; ++k) w[k] = _mm512_load_si512(&p[k]->q[s * kG + t]);
      for (int i = 0; i < MR; ++i) {
        const int8_t* xp = xb + i * x.cols + 4 * (s * kG + t);
        __m512i(&chain)[NP] = kTwoChains && (t & 1) != 0 ? part2[i] : part[i];
        if constexpr (NP == 1) {
          chain[0] = dpbusd_bcst(chain[0], w[0], xp);
        } else {
          const __m512i xv = bcst32(xp);
          for (int k = 0; k < NP; ++k) chain[k] = _mm512_dpbusd_epi32(chain[k], w[k], xv);
        }
      }
    }
    if constexpr (kTwoChains) {
      for (int i = 0; i < MR; ++i) {
        for (int k = 0; k < NP; ++k) part[i][k] = _mm512_add_epi32(part[i][k], part2[i][k]);
      }
    }
    for (int k = 0; k < NP; ++k) {
      const __m512i sc = _mm512_load_si512(&p[k]->sc[s]);
      for (int i = 0; i < MR; ++i) {
        tot[i][k] = _mm512_add_epi32(tot[i][k], _mm512_mullo_epi32(part[i][k], sc));
      }
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int k = 0; k < NP; ++k) acc[i][k] = F::finish(*p[k], x, i0 + i, b, tot[i][k], acc[i][k]);
  }
}

template <typename F, int NP, int MR>
inline void rows_over_blocks(const typename F::Packed* const* p, const KActs& x, int64_t i0,
                             float* y, int64_t ldy, const __mmask16* valid) {
  __m512 acc[MR][NP];
  for (int i = 0; i < MR; ++i) {
    for (int k = 0; k < NP; ++k) acc[i][k] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < x.nb; ++b) {
    const typename F::Packed* pb[NP];
    for (int k = 0; k < NP; ++k) pb[k] = p[k] + b;
    step<F, NP, MR>(pb, x, i0, b, acc);
  }
  for (int i = 0; i < MR; ++i) {
    for (int k = 0; k < NP; ++k) {
      _mm512_mask_storeu_ps(y + (i0 + i) * ldy + kPanel * k, valid[k], acc[i][k]);
    }
  }
}

// Every x row over NP packed panels: groups of kMr, then the rest.
// (x rows [i, m) when i is given.)
template <typename F, int NP>
void all_rows(const typename F::Packed* const* p, const KActs& x, int64_t m, float* y,
              int64_t ldy, const __mmask16* valid, int64_t i = 0) {
  for (; i + kMr <= m; i += kMr) rows_over_blocks<F, NP, kMr>(p, x, i, y, ldy, valid);
  switch (m - i) {
    case 1: return rows_over_blocks<F, NP, 1>(p, x, i, y, ldy, valid);
    case 2: return rows_over_blocks<F, NP, 2>(p, x, i, y, ldy, valid);
    case 3: return rows_over_blocks<F, NP, 3>(p, x, i, y, ldy, valid);
    default: return;
  }
}

// The AMX path (amx_tiles.h) of prefill: 16 x rows over one packed panel, a super-block's integer
// totals from the tiles with the sub-block scales folded into the weights. Each lane's scale sc_s
// is cut into kAmxDigits digits of kAmxDigitBits bits (the top one signed: sc = sum_d digit_d 2^(d
// bits)), small enough that every (q + kQuantOffset) digit_d fits an int8; so per digit one weight
// copy q'_d = (q + kQuantOffset) digit_d(sc_s) (built once per packed panel), whose dot with x over
// the whole super-block (four 64-byte TDPBSSD) is sum_s digit_d(sc_s) dot_s, and the total is
// sum_d C_d << d bits: exactly step's integer total sum_s sc_s dot_s. Then F::finish: the same
// float steps, the same bits. (Per-sub-block C tiles with the scales multiplied on the vector
// side were no faster than VNNI: a tile store and vpmulld per sub-block; docs/tuning.md.)
template <typename F>
void amx_digit_quants(const typename F::Packed& blk, __m512i* out) {
  constexpr int kN = F::kAmxDigits, kBits = F::kAmxDigitBits;
  const __m512i offset = _mm512_set1_epi8(static_cast<char>(F::kQuantOffset));
  const __m512i low_bytes = _mm512_set1_epi16(0x00ff);
  const __m512i high_bytes = _mm512_set1_epi16(static_cast<int16_t>(0xff00));
  for (int s = 0; s < F::kSubs; ++s) {
    for (int d = 0; d < kN; ++d) {
      // The low digits unsigned, the top one signed (its 16 low bits), then in both 16-bit halves.
      const int32_t mask = d < kN - 1 ? (1 << kBits) - 1 : 0xffff;
      __m512i digit = _mm512_and_si512(_mm512_srav_epi32(blk.sc[s], _mm512_set1_epi32(d * kBits)), _mm512_set1_epi32(mask));
      digit = _mm512_or_si512(digit, _mm512_slli_epi32(digit, 16));
      for (int t = 0; t < F::kGroups; ++t) {
        const int g = s * F::kGroups + t;
        const __m512i q = _mm512_add_epi8(blk.q[g], offset);
        // Bytewise q * digit (mod 256, exact since it fits an int8): even and odd bytes apart.
        const __m512i even = _mm512_mullo_epi16(_mm512_and_si512(q, low_bytes), digit);
        const __m512i odd = _mm512_mullo_epi16(_mm512_and_si512(q, high_bytes), digit);
        out[64 * d + g] = _mm512_or_si512(_mm512_and_si512(even, low_bytes), odd);
      }
    }
  }
}

// C tile of digit d: 2, 3, 6, 7.
constexpr int amx_digit_tile(int d) { return d < 2 ? 2 + d : 4 + d; }

// Step k of a super-block's 4 kN dots: 64-byte chunk c = k / kN of x (loaded at d = 0, into A
// tile 0 or 4) against digit d = k % kN's copy (B tile 1 or 5, alternating), into d's C tile.
template <int kK, int kN>
RIDGE_STEP_INLINE inline void amx_digit_step(const int8_t* x, int64_t x_stride, const __m512i* w) {
  constexpr int kChunk = kK / kN, kD = kK % kN;
  constexpr int kA = kChunk % 2 == 0 ? 0 : 4, kB = kK % 2 == 0 ? 1 : 5;
  if constexpr (kD == 0) avx512::tile_load<kA>(x + 64 * kChunk, x_stride);
  avx512::tile_load<kB>(w + 64 * kD + 16 * kChunk, 64);
  avx512::tile_dpbssd<amx_digit_tile(kD), kA, kB>();
}

template <int kN>
RIDGE_STEP_INLINE inline void amx_superblock(const int8_t* x, int64_t x_stride, const __m512i* w) {
  [&]<int... kD>(std::integer_sequence<int, kD...>) {
    (avx512::tile_zero<amx_digit_tile(kD)>(), ...);
  }(std::make_integer_sequence<int, kN>{});
  [&]<int... kK>(std::integer_sequence<int, kK...>) {
    (amx_digit_step<kK, kN>(x, x_stride, w), ...);
  }(std::make_integer_sequence<int, 4 * kN>{});
}

template <int kN>
RIDGE_STEP_INLINE inline void amx_store_digits(avx512::TileDots* out) {
  [&]<int... kD>(std::integer_sequence<int, kD...>) {
    (avx512::tile_store<amx_digit_tile(kD)>(out + kD), ...);
  }(std::make_integer_sequence<int, kN>{});
}

// 16 x rows from i0 over a packed panel p whose digit copies (amx_digit_quants) are at
// digits + 64 kAmxDigits b for super-block b. The tiles compute super-block b + 1 while the
// vector units finish b.
template <typename F>
void amx_rows(const typename F::Packed* p, const __m512i* digits, const KActs& x, int64_t i0,
              float* y, int64_t ldy, __mmask16 valid) {
  static_assert(F::kSubs * F::kGroups == 64);
  constexpr int kRows = avx512::kAmxRows, kN = F::kAmxDigits;
  __m512 acc[kRows];
  for (int i = 0; i < kRows; ++i) acc[i] = _mm512_setzero_ps();
  const int8_t* xq = x.q + i0 * x.cols;
  alignas(64) avx512::TileDots dots[2][kN];
  const auto finish = [&](int64_t b) RIDGE_STEP_INLINE {
    const avx512::TileDots* c = dots[b % 2];
    for (int i = 0; i < kRows; ++i) {
      __m512i tot = _mm512_load_si512(c[0][i]);
      for (int d = 1; d < kN; ++d) {
        tot = _mm512_add_epi32(tot, _mm512_slli_epi32(_mm512_load_si512(c[d][i]), d * F::kAmxDigitBits));
      }
      acc[i] = F::finish(p[b], x, i0 + i, b, tot, acc[i]);
    }
  };
  avx512::amx_fence();
  amx_superblock<kN>(xq, x.cols, digits);
  amx_store_digits<kN>(dots[0]);
  for (int64_t b = 1; b < x.nb; ++b) {
    amx_superblock<kN>(xq + kSuperBlock * b, x.cols, digits + 64 * kN * b);
    finish(b - 1);
    amx_store_digits<kN>(dots[b % 2]);
  }
  finish(x.nb - 1);
  for (int i = 0; i < kRows; ++i) _mm512_mask_storeu_ps(y + (i0 + i) * ldy, valid, acc[i]);
}

// Decode: each super-block of the panel is used at once by all MR (= m) rows, so the weights are
// read once, in order. A kPanels16 panel goes through F::layout_step, which feeds the loaded
// registers to the dot products; a Panel of kRows rows is packed into one stack block first.
template <typename F, int MR, typename P>
void direct_panel(const P& panel, const KActs& x, float* y, int64_t ldy, __mmask16 valid) {
  __m512 acc[MR][1];
  for (int i = 0; i < MR; ++i) acc[i][0] = _mm512_setzero_ps();
  if constexpr (std::is_same_v<P, LayoutPanel>) {
    for (int64_t b = 0; b < x.nb; ++b) F::template layout_step<MR>(panel, x, b, acc);
  } else {
    typename F::Packed block;
    const typename F::Packed* pb[1] = {&block};
    for (int64_t b = 0; b < x.nb; ++b) {
      F::pack(panel, b, &block);
      step<F, 1, MR>(pb, x, 0, b, acc);
    }
  }
  for (int i = 0; i < MR; ++i) _mm512_mask_storeu_ps(y + i * ldy, valid, acc[i][0]);
}


// m = 1 for formats with F::kRowDecode: the weights are streamed row after row (the hardware
// prefetcher follows) and F::row_block(block, x of the block, its bsums, lanes, r) reduces row r's
// super-block to its exact integers and scales in F::RowLanes (one 16-lane record per
// super-block); then the panel's lanes take F::lane_step(lanes, dx, acc) in block order: the
// GEMM's float step on the same integers. xq: x's quants, in the order row_block reads them.
template <typename F>
void decode_streamed(const WeightView& w, const Acts& a, const KActs& x, const int8_t* xq,
                     int64_t j0, int64_t j1, float* y) {
  const ThreadScratch scratch(kScratchKernelLanes, static_cast<size_t>(x.nb) * sizeof(typename F::RowLanes));
  auto* const lanes = static_cast<typename F::RowLanes*>(scratch.data());
  std::memset(static_cast<void*>(lanes), 0, static_cast<size_t>(x.nb) * sizeof(typename F::RowLanes));
  for (int64_t j = j0; j < j1; j += kPanel) {
    const int64_t n = j1 - j < kPanel ? j1 - j : kPanel;
    for (int64_t r = 0; r < n; ++r) {
      const uint8_t* row = static_cast<const uint8_t*>(w.data) + static_cast<uint64_t>(j + r) * w.row_bytes;
      for (int64_t b = 0; b < x.nb; ++b) {
        F::row_block(row + b * F::kBlockBytes, xq + kSuperBlock * b, a.q8k_bsums + 16 * b,
                     &lanes[b], static_cast<int>(r));
      }
    }
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < x.nb; ++b) acc = F::lane_step(lanes[b], x.d[b], acc);
    _mm512_mask_storeu_ps(y + j, valid_mask(j, j1), acc);
  }
}

// Output rows [j0, j1) over the panels panel_at(j, prefetch panels) gives (see rows_k).
template <typename F, typename PanelAt>
void rows_k_from(const PanelAt& panel_at, const Acts& a, const KActs& x, int64_t j0, int64_t j1,
                 float* y, int64_t ldy) {
  if (a.m <= kDirectRows) {
    for (int64_t j = j0; j < j1; j += kPanel) {
      const auto panel = panel_at(j, 1);
      const __mmask16 valid = valid_mask(j, j1);
      switch (a.m) {
        case 1: direct_panel<F, 1>(panel, x, y + j, ldy, valid); break;
        case 2: direct_panel<F, 2>(panel, x, y + j, ldy, valid); break;
        case 3: direct_panel<F, 3>(panel, x, y + j, ldy, valid); break;
        case 4: direct_panel<F, 4>(panel, x, y + j, ldy, valid); break;
        default: break;
      }
    }
    return;
  }
  // Prefill: pack two panels (their whole rows), then run every x row over them (groups of 16 on
  // the AMX tiles where they are on, the rest through vpdpbusd).
  const ThreadScratch buffer(kScratchKernelPack, static_cast<size_t>(2 * x.nb) * sizeof(typename F::Packed));
  auto* const packed = static_cast<typename F::Packed*>(buffer.data());
  typename F::Packed* const p[2] = {packed, packed + x.nb};
  const int64_t m_amx = avx512::amx_row_count(a.m);
  const avx512::AmxTiles tiles(64, m_amx > 0);
  const size_t digit_regs = m_amx > 0 ? static_cast<size_t>(x.nb) * 64 * F::kAmxDigits : 0;
  const ThreadScratch digit_buffer(kScratchKernelAmx, 2 * digit_regs * sizeof(__m512i));
  __m512i* const digits[2] = {static_cast<__m512i*>(digit_buffer.data()),
                              static_cast<__m512i*>(digit_buffer.data()) + digit_regs};
  for (int64_t j = j0; j < j1; j += 2 * kPanel) {
    const int np = j + kPanel < j1 ? 2 : 1;
    for (int k = 0; k < np; ++k) {
      const auto panel = panel_at(j + kPanel * k, 2);  // prefetch the next pair, read during all_rows
      for (int64_t b = 0; b < x.nb; ++b) F::pack(panel, b, p[k] + b);
      if (m_amx > 0) {
        for (int64_t b = 0; b < x.nb; ++b) amx_digit_quants<F>(p[k][b], digits[k] + 64 * F::kAmxDigits * b);
      }
    }
    const __mmask16 valid[2] = {valid_mask(j, j1), valid_mask(j + kPanel, j1)};
    for (int64_t i = 0; i < m_amx; i += avx512::kAmxRows) {
      for (int k = 0; k < np; ++k) amx_rows<F>(p[k], digits[k], x, i, y + j + kPanel * k, ldy, valid[k]);
    }
    const typename F::Packed* const cp[2] = {p[0], p[1]};
    if (np == 2) {
      all_rows<F, 2>(cp, x, a.m, y + j, ldy, valid, m_amx);
    } else {
      all_rows<F, 1>(cp, x, a.m, y + j, ldy, valid, m_amx);
    }
  }
}

// Whether a format reads kPanels16 matrices (F::layout_step; the grid formats stay in GGUF's
// rows: decode packs one super-block of a panel at a time, prefill two whole panels).
template <typename F>
constexpr bool kHasPanelLayout = requires { &F::template layout_step<1>; };

// The rows routine of a format F (see the file comment): weights in kRows, or in kPanels16 (full
// panels; the rows % 16 tail is kRows).
template <typename F>
void rows_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  KActs x;
  x.q = a.q8_qs;
  x.d = a.q8k_d;
  x.cols = a.cols;
  x.nb = a.cols / kSuperBlock;
  const ThreadScratch extra(kScratchKernelTables, static_cast<size_t>(a.m * x.nb * F::kExtra) * sizeof(int32_t));
  x.extra = static_cast<int32_t*>(extra.data());
  F::prepare_extra(a, x);
  if constexpr (F::kRowDecode) {
    if (a.m == 1 && w.layout == WeightLayout::kRows) return F::decode_rows(w, a, x, j0, j1, y);
  }
  const auto rows_at = [&](int64_t j, int ahead_panels) {
    Panel panel = panel_at(w, j, j1);
    panel.prefetch_ahead *= ahead_panels;
    return panel;
  };
  if constexpr (!kHasPanelLayout<F>) {
    RIDGE_CHECK(w.layout == WeightLayout::kRows);
    return rows_k_from<F>(rows_at, a, x, j0, j1, y, ldy);
  } else {
    if (w.layout != WeightLayout::kPanels16) return rows_k_from<F>(rows_at, a, x, j0, j1, y, ldy);
    const auto* data = static_cast<const uint8_t*>(w.data);
  split_panels16(
      w, j0, j1,
      [&](int64_t p0, int64_t p1, uint64_t panel_bytes) {
        const auto layout_at = [&](int64_t j, int ahead_panels) {
          const int64_t ahead = ahead_panels == 1 ? kLayoutPrefetchBytes : static_cast<int64_t>(ahead_panels * panel_bytes);
          return LayoutPanel{data + static_cast<uint64_t>(j / kPanel) * panel_bytes, ahead};
        };
        rows_k_from<F>(layout_at, a, x, p0, p1, y, ldy);
      },
      [&](int64_t r0, int64_t r1) { rows_k_from<F>(rows_at, a, x, r0, r1, y, ldy); });
  }
}

}  // namespace
}  // namespace ridge::kernels::kquant_avx512
