// AVX-512 VNNI matmul of MXFP4 weights with Q8_0 activations, bit-identical to the reference
// (kernels/quant/ref_rows.cpp, dot_mxfp4): per block the exact integer dot isum of the 32 table
// values (E2M1 doubled) with the activation bytes, then per output, block after block from 0,
//   acc = acc + (dx * 2^(e - 128)) * float(isum)        (two roundings, no fma).
//
// Output rows are taken 16 at a time (a panel), one per 32-bit lane, as in panel_q8.h: per block
// the 16 rows' qs (16 bytes each) are loaded four rows to a register and transposed per 128-bit
// lane, so that register k, lane r holds qs 4k..4k+3 of row r; the low nibbles are elements
// 4k..4k+3, the high ones 16 + 4k.., and one vpshufb each through the table shifted to unsigned
// (u = value + 12, 0..24) gives 8 registers, register g holding elements 4g..4g+3 of every row.
// vpdpbusd with the activation's 4 bytes of group g broadcast then accumulates each row's dot in
// its lane; the integer sum starts at -12 * sum(x_b) (the quantizer's block sum), so it ends at
// isum exactly. Up to kMaxMr x rows share each block unpacked in registers (decode); with more x
// rows a panel is unpacked once into a buffer for all of them. Each lane runs the same operations
// whatever m, j0, j1 or its panel's other rows are: batch invariant. The product is rounded on
// its own before the add: GCC contracts a multiply and an add into an fma by default in C++
// (-ffp-contract=fast) where the target has FMA, as this directory's does, so the product passes
// through an empty asm (`rounded`) that it cannot fuse across (the tests compare with ref and
// with ggml bit for bit, and fail with the fma).
//
// GCC 12's _mm512_undefined_*() self-initializes a local, which -Wuninitialized reports when
// intrinsics such as _mm512_unpacklo_epi32 are inlined at -O3 (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "base/check.h"
#include "base/thread_scratch.h"
#include "kernels/gather_halves.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/x86_avx512/quant_simd.h"

namespace ridge::kernels::quant_avx512 {
namespace {

constexpr int kPanel = 16;           // weight rows per panel, one per lane
constexpr int kMaxMr = 8;            // x rows sharing one loaded block
constexpr int64_t kBlockBytes = sizeof(BlockMxfp4);
constexpr int32_t kOffset = 12;      // u = value + kOffset >= 0 (vpdpbusd's unsigned operand)
constexpr int64_t kPrefetchEvery = 64 / kBlockBytes;  // blocks per line, rounded down
static_assert(kBlockBytes == 17);

constexpr std::array<uint8_t, 16> offset_table() {
  std::array<uint8_t, 16> t{};
  for (int q = 0; q < 16; ++q) t[q] = static_cast<uint8_t>(kMxfp4Values[q] + kOffset);
  return t;
}
alignas(16) constexpr std::array<uint8_t, 16> kTableU = offset_table();

// One block of a panel: 8 registers of u (register g, lane r: elements 4g..4g+3 of row r) and
// the 16 rows' halved scales 2^(e - 128).
struct PanelBlock {
  __m512i w[8];
  __m512 d;
};

// Lane r = 2^(e_r - 128) (mxfp4_half_scale) for the exponent bytes at `off` of the 16 rows: the
// 16-bit fields there (e, qs[0]) assembled in general registers (gather_halves.h; a byte-wise
// assembly was vectorized by GCC into 16-bit stack stores and reloads, and a gather costs more).
inline __attribute__((always_inline)) __m512 half_scales(const uint8_t* const* row, int64_t off) {
  uint64_t q[4];
  gather_halves(row, off, q);
  const __m256i v = _mm256_set_epi64x(static_cast<long long>(q[3]), static_cast<long long>(q[2]),
                                      static_cast<long long>(q[1]), static_cast<long long>(q[0]));
  const __m512i e = _mm512_and_si512(_mm512_cvtepu16_epi32(v), _mm512_set1_epi32(0xff));
  const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
  const __m512i subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
  const __mmask16 small = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
  return _mm512_castsi512_ps(_mm512_mask_blend_epi32(small, normal, subnormal));
}

// Block `off` (bytes into each row) of the panel's 16 rows.
inline __attribute__((always_inline)) void load_block(const uint8_t* const* row, int64_t off,
                                                      __m512i table, PanelBlock* out) {
  // z[q], 128-bit lane L = the 16 qs bytes of row q + 4L.
  __m512i z[4];
  const int64_t at = off + 1;
  for (int q = 0; q < 4; ++q) z[q] = load_4x128(row[q] + at, row[q + 4] + at, row[q + 8] + at, row[q + 12] + at);
  // 4 x 4 dword transpose in each 128-bit lane: t[k] lane r = dword k (qs 4k..4k+3) of row r.
  const __m512i a0 = _mm512_unpacklo_epi32(z[0], z[1]);
  const __m512i a1 = _mm512_unpackhi_epi32(z[0], z[1]);
  const __m512i a2 = _mm512_unpacklo_epi32(z[2], z[3]);
  const __m512i a3 = _mm512_unpackhi_epi32(z[2], z[3]);
  const __m512i t[4] = {_mm512_unpacklo_epi64(a0, a2), _mm512_unpackhi_epi64(a0, a2),
                        _mm512_unpacklo_epi64(a1, a3), _mm512_unpackhi_epi64(a1, a3)};
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  for (int k = 0; k < 4; ++k) {
    out->w[k] = _mm512_shuffle_epi8(table, _mm512_and_si512(t[k], low4));
    out->w[k + 4] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(t[k], 4), low4));
  }
  out->d = half_scales(row, off);
}

// v as an opaque value: what reaches the next operation is the rounded product, not a multiply
// the compiler may fuse into a following add.
inline __m512 rounded(__m512 v) {
  __asm__("" : "+v"(v));
  return v;
}

// acc += dot(w bytes (unsigned), the 4 bytes at p broadcast (signed)) per 32-bit lane, with the
// broadcast folded into the instruction's memory operand (GCC does not fold it by itself).
inline __m512i dpbusd_bcst(__m512i acc, __m512i w, const int8_t* p) {
  using Unaligned32 = int32_t __attribute__((may_alias, aligned(1)));
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*reinterpret_cast<const Unaligned32*>(p)));
  return acc;
}

// Block b of a panel straight from its 16 rows (past the matrix: repeats, results discarded),
// prefetching the same lines of the next panel `ahead` bytes on (0: none) about once per line:
// a panel's rows are read column-wise, which the hardware prefetcher does not follow.
struct DirectBlocks {
  const uint8_t* const* row;
  int64_t ahead;
  __m512i table;
  inline __attribute__((always_inline)) const PanelBlock& load(int64_t b, PanelBlock* tmp) const {
    const int64_t off = b * kBlockBytes;
    if (ahead != 0 && b % kPrefetchEvery == 0) {
      for (int r = 0; r < kPanel; ++r) _mm_prefetch(reinterpret_cast<const char*>(row[r] + off) + ahead, _MM_HINT_T1);
    }
    load_block(row, off, table, tmp);
    return *tmp;
  }
};

// Block b of a panel unpacked beforehand (m > kMaxMr: once for all groups of x rows).
struct PackedBlocks {
  const PanelBlock* blocks;
  inline __attribute__((always_inline)) const PanelBlock& load(int64_t b, PanelBlock*) const { return blocks[b]; }
};

// A panel's 16 output rows against x rows [i0, i0 + MR), all nb blocks from `src`; stores the
// `valid` lanes. Per lane the same operations whichever source and MR.
template <int MR, typename Blocks>
void panel(const Blocks& src, const Acts& a, int64_t i0, int64_t nb, float* y, int64_t ldy, __mmask16 valid) {
  const int8_t* xq = a.q8_qs + i0 * a.cols;
  const float* xd = a.q8_d + i0 * nb;
  const int32_t* xs = a.q8_sum + i0 * nb;
  __m512 acc[MR];
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    PanelBlock tmp;
    const PanelBlock& blk = src.load(b, &tmp);
    // With few x rows, two chains per row (groups 0-3 and 4-7) keep more vpdpbusd in flight;
    // the integers are exact, so how they are split changes nothing.
    constexpr int kChains = MR >= 4 ? 1 : 2;
    __m512i isum[kChains][MR];
    for (int i = 0; i < MR; ++i) {
      isum[0][i] = _mm512_set1_epi32(-kOffset * xs[i * nb + b]);
      if (kChains == 2) isum[kChains - 1][i] = _mm512_setzero_si512();
    }
    for (int g = 0; g < 8; ++g) {
      const int c = kChains == 2 && g >= 4 ? 1 : 0;
      for (int i = 0; i < MR; ++i) {
        isum[c][i] = dpbusd_bcst(isum[c][i], blk.w[g], xq + i * a.cols + b * 32 + 4 * g);
      }
    }
    for (int i = 0; i < MR; ++i) {
      if (kChains == 2) isum[0][i] = _mm512_add_epi32(isum[0][i], isum[kChains - 1][i]);
      const __m512 d = _mm512_mul_ps(blk.d, _mm512_set1_ps(xd[i * nb + b]));
      acc[i] = _mm512_add_ps(acc[i], rounded(_mm512_mul_ps(d, _mm512_cvtepi32_ps(isum[0][i]))));
    }
  }
  for (int i = 0; i < MR; ++i) _mm512_mask_storeu_ps(y + (i0 + i) * ldy, valid, acc[i]);
}

// x rows [i, m) over one panel, kMaxMr at a time, then the rest.
template <typename Blocks>
void panel_all_rows(const Blocks& src, const Acts& a, int64_t nb, float* y, int64_t ldy, __mmask16 valid) {
  int64_t i = 0;
  for (; i + kMaxMr <= a.m; i += kMaxMr) panel<kMaxMr>(src, a, i, nb, y, ldy, valid);
  switch (a.m - i) {
    case 1: return panel<1>(src, a, i, nb, y, ldy, valid);
    case 2: return panel<2>(src, a, i, nb, y, ldy, valid);
    case 3: return panel<3>(src, a, i, nb, y, ldy, valid);
    case 4: return panel<4>(src, a, i, nb, y, ldy, valid);
    case 5: return panel<5>(src, a, i, nb, y, ldy, valid);
    case 6: return panel<6>(src, a, i, nb, y, ldy, valid);
    case 7: return panel<7>(src, a, i, nb, y, ldy, valid);
    default: return;
  }
}

}  // namespace

// m <= kMaxMr (decode): each block is unpacked in registers and used at once by every x row.
// Larger m: each panel is unpacked once into a per-thread buffer that every group of x rows then
// reads (same registers, same bits).
void rows_mxfp4(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  const int64_t nb = a.cols / kQk;
  RIDGE_CHECK(w.row_bytes == static_cast<uint64_t>(nb * kBlockBytes));
  const auto* base = static_cast<const uint8_t*>(w.data);
  const __m512i table = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kTableU.data())));
  const bool pack = a.m > kMaxMr;
  const ThreadScratch buffer(kScratchKernelPack, pack ? static_cast<size_t>(nb) * sizeof(PanelBlock) : 0);
  auto* packed = static_cast<PanelBlock*>(buffer.data());
  for (int64_t j = j0; j < j1; j += kPanel) {
    const int n_valid = static_cast<int>(j1 - j < kPanel ? j1 - j : kPanel);
    const auto valid = static_cast<__mmask16>((1u << n_valid) - 1u);
    const uint8_t* row[kPanel];
    for (int r = 0; r < kPanel; ++r) {
      row[r] = base + static_cast<uint64_t>(j + (r < n_valid ? r : n_valid - 1)) * w.row_bytes;
    }
    const int64_t ahead = j + kPanel < j1 ? static_cast<int64_t>(kPanel * w.row_bytes) : 0;
    const DirectBlocks direct{row, ahead, table};
    if (!pack) {
      panel_all_rows(direct, a, nb, y + j, ldy, valid);
      continue;
    }
    for (int64_t b = 0; b < nb; ++b) direct.load(b, &packed[b]);
    panel_all_rows(PackedBlocks{packed}, a, nb, y + j, ldy, valid);
  }
}

}  // namespace ridge::kernels::quant_avx512
