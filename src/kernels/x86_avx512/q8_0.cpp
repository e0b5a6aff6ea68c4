// AVX-512 VNNI matmul for Q8_0 weights (GGUF block: fp16 d, 32 int8 q) and Q8_0 activations.
//
// Layout: output rows are taken 16 at a time (a panel), one per 32-bit lane. For block b, the
// panel's 16 x 32 weight bytes are transposed into 8 registers, register g holding bytes
// 4g..4g+3 of every row, offset by 128 (w ^ 0x80 = w + 128, unsigned). vpdpbusd with the four
// activation bytes broadcast from memory then accumulates, in lane l, the exact integer dot of row
// l with x over the block plus 128 * sum(x_b), which the precomputed activation block sum removes
// (vpdpbusd wants its unsigned operand in a register, so the weights carry the offset).
//
// The f32 accumulation is the specification of kernels/ref/ref_q8_0.cpp exactly:
// acc = fma(float(isum_b), dw_b * dx_b, acc) block after block, one lane per output row, so the
// result is bit-identical to ref and independent of m, tiling and threads.
//
// m <= 8 (decode) transposes each block in registers and uses it at once for all m rows; larger
// m (prefill) packs two panels' transposed blocks into a buffer that every group of 6 x rows
// then reuses, each activation broadcast feeding 32 output rows.
//
// GCC 12's _mm512_undefined_*() self-initializes a local, which -Wuninitialized reports when
// intrinsics such as _mm512_cvtph_ps are inlined at -O3 (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>
#include <new>

#include "kernels/x86_avx512/avx512.h"
#ifndef RIDGE_PF_HINT
#define RIDGE_PF_HINT _MM_HINT_T1
#endif

namespace ridge::kernels::avx512 {
namespace {

constexpr int64_t kBlockBytes = 34;
constexpr int kPanel = 16;  // weight rows per panel (one per lane)
constexpr int kMr = 8;      // decode: up to 8 x rows share one in-register transposed block

// One transposed weight block of a panel: 8 x 64 bytes of (w + 128), then 16 f32 scales.
struct alignas(64) PackedBlock {
  __m512i w[8];
  __m512 d;
};

// Reads block b of the panel's rows straight from the GGUF rows.
struct DirectBlocks {
  const uint8_t* row[kPanel];  // rows past the matrix repeat the last row (results discarded)
  __m512i d_offsets;           // byte offset of each row from row[0]
  int64_t prefetch_ahead = 0;  // bytes from a row to the same row of the next panel

  void load(int64_t b, __m512i out[8], __m512* d) const {
    const int64_t off = b * kBlockBytes;
    // z[r] = [row r qs (8 dwords) | row r + 8 qs (8 dwords)]
    // The panel's 16 rows are one contiguous region that is read column-wise, a pattern the
    // hardware prefetcher does not follow; so the same lines of the next panel are prefetched
    // while this one is read (one line per row every 2 blocks), a whole panel ahead.
    for (int r = 0; r < kPanel && (b & 1) == 0 && prefetch_ahead != 0; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(row[r] + off) + prefetch_ahead, RIDGE_PF_HINT);
    }
    __m512i z[8];
    for (int r = 0; r < 8; ++r) {
      const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[r] + off + 2));
      const __m256i hi =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[r + 8] + off + 2));
      z[r] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
    // 8 x 8 dword transpose inside each 256-bit half.
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
    // u[0..3] hold rows 0-3 (and 8-11), u[4..7] rows 4-7 (and 12-15); within a 128-bit lane,
    // u[0] = dword g0 of rows 0..3, u[1] = g1, u[2] = g2, u[3] = g3, with g4..7 in lane 1.
    const __m512i lo_idx = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const __m512i hi_idx = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int g = 0; g < 4; ++g) {
      out[g] = _mm512_xor_si512(_mm512_permutex2var_epi64(u[g], lo_idx, u[g + 4]), flip);
      out[g + 4] = _mm512_xor_si512(_mm512_permutex2var_epi64(u[g], hi_idx, u[g + 4]), flip);
    }
    const __m512i d32 = _mm512_i32gather_epi32(d_offsets, row[0] + off, 1);
    *d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d32));
  }
};

struct PackedBlocks {
  const PackedBlock* blocks;
  void load(int64_t b, __m512i out[8], __m512* d) const {
    for (int g = 0; g < 8; ++g) out[g] = _mm512_load_si512(&blocks[b].w[g]);
    *d = blocks[b].d;
  }
};

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

// acc[i] (16 output rows) for MR x rows starting at x row i0; stores `n_valid` lanes.
template <int MR, typename Blocks>
void panel_rows(const Blocks& src, const Acts& a, int64_t i0, int64_t nb, float* y, int64_t ldy,
                __mmask16 valid) {
  __m512 acc[MR];
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  const int8_t* xq = a.q8_qs + i0 * a.cols;
  const float* xd = a.q8_d + i0 * nb;
  const int32_t* xs = a.q8_sum + i0 * nb;
  for (int64_t b = 0; b < nb; ++b) {
    __m512i w[8];
    __m512 dw;
    src.load(b, w, &dw);
    // g outer, i inner: MR independent vpdpbusd chains in flight instead of one serial chain;
    // with few rows, a second chain per row (g >= 4), added at the end (integers: exact).
    constexpr int kChains = MR >= 4 ? 1 : 2;
    __m512i isum[kChains][MR];
    for (int i = 0; i < MR; ++i) {
      isum[0][i] = _mm512_set1_epi32(-128 * xs[i * nb + b]);
      if (kChains == 2) isum[kChains - 1][i] = _mm512_setzero_si512();
    }
    for (int g = 0; g < 8; ++g) {
      const int c = kChains == 2 && g >= 4 ? 1 : 0;
      for (int i = 0; i < MR; ++i) {
        isum[c][i] = dpbusd_bcst(isum[c][i], w[g], xq + i * a.cols + b * 32 + 4 * g);
      }
    }
    if (kChains == 2) {
      for (int i = 0; i < MR; ++i) isum[0][i] = _mm512_add_epi32(isum[0][i], isum[kChains - 1][i]);
    }
    for (int i = 0; i < MR; ++i) {
      const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(xd[i * nb + b]));
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[0][i]), scale, acc[i]);
    }
  }
  for (int i = 0; i < MR; ++i) _mm512_mask_storeu_ps(y + (i0 + i) * ldy, valid, acc[i]);
}

template <typename Blocks>
void panel_all_rows(const Blocks& src, const Acts& a, int64_t nb, float* y, int64_t ldy,
                    __mmask16 valid) {
  int64_t i = 0;
  for (; i + kMr <= a.m; i += kMr) panel_rows<kMr>(src, a, i, nb, y, ldy, valid);
  switch (a.m - i) {
    case 1: return panel_rows<1>(src, a, i, nb, y, ldy, valid);
    case 2: return panel_rows<2>(src, a, i, nb, y, ldy, valid);
    case 3: return panel_rows<3>(src, a, i, nb, y, ldy, valid);
    case 4: return panel_rows<4>(src, a, i, nb, y, ldy, valid);
    case 5: return panel_rows<5>(src, a, i, nb, y, ldy, valid);
    case 6: return panel_rows<6>(src, a, i, nb, y, ldy, valid);
    case 7: return panel_rows<7>(src, a, i, nb, y, ldy, valid);
    default: return;
  }
}

// The prefill micro-kernel: two packed panels (32 output rows) against MR x rows, so that each
// activation broadcast feeds two vpdpbusd (the broadcast costs a vector uop of its own). Per
// lane it performs exactly the operations of panel_rows: the same bits.
constexpr int kWideMr = 6;  // 6 x (2 isum + 2 acc) + 2 weights + broadcast + 2 scales <= 32 regs

template <int MR>
void wide_rows(const PackedBlock* p0, const PackedBlock* p1, const Acts& a, int64_t i0,
               int64_t nb, float* y, int64_t ldy, __mmask16 valid0, __mmask16 valid1) {
  __m512 acc[MR][2];
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  const int8_t* xq = a.q8_qs + i0 * a.cols;
  const float* xd = a.q8_d + i0 * nb;
  const int32_t* xs = a.q8_sum + i0 * nb;
  for (int64_t b = 0; b < nb; ++b) {
    __m512i isum[MR][2];
    for (int i = 0; i < MR; ++i) {
      isum[i][0] = isum[i][1] = _mm512_set1_epi32(-128 * xs[i * nb + b]);
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
      const __m512 dx = _mm512_set1_ps(xd[i * nb + b]);
      acc[i][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i][0]), _mm512_mul_ps(p0[b].d, dx),
                                  acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i][1]), _mm512_mul_ps(p1[b].d, dx),
                                  acc[i][1]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    _mm512_mask_storeu_ps(y + (i0 + i) * ldy, valid0, acc[i][0]);
    _mm512_mask_storeu_ps(y + (i0 + i) * ldy + kPanel, valid1, acc[i][1]);
  }
}

void wide_all_rows(const PackedBlock* p0, const PackedBlock* p1, const Acts& a, int64_t nb,
                   float* y, int64_t ldy, __mmask16 valid0, __mmask16 valid1) {
  int64_t i = 0;
  for (; i + kWideMr <= a.m; i += kWideMr) {
    wide_rows<kWideMr>(p0, p1, a, i, nb, y, ldy, valid0, valid1);
  }
  switch (a.m - i) {
    case 1: return wide_rows<1>(p0, p1, a, i, nb, y, ldy, valid0, valid1);
    case 2: return wide_rows<2>(p0, p1, a, i, nb, y, ldy, valid0, valid1);
    case 3: return wide_rows<3>(p0, p1, a, i, nb, y, ldy, valid0, valid1);
    case 4: return wide_rows<4>(p0, p1, a, i, nb, y, ldy, valid0, valid1);
    case 5: return wide_rows<5>(p0, p1, a, i, nb, y, ldy, valid0, valid1);
    default: return;
  }
}

struct PackBuffer {
  PackedBlock* p = nullptr;
  explicit PackBuffer(int64_t n) {
    p = static_cast<PackedBlock*>(
        ::operator new(static_cast<size_t>(n) * sizeof(PackedBlock), std::align_val_t(64)));
  }
  ~PackBuffer() { ::operator delete(p, std::align_val_t(64)); }
  PackBuffer(const PackBuffer&) = delete;
  PackBuffer& operator=(const PackBuffer&) = delete;
};

// The panel of 16 rows starting at j (rows past j1 repeat the last valid row).
DirectBlocks panel_at(const WeightView& w, int64_t j, int64_t j1) {
  const auto* base = static_cast<const uint8_t*>(w.data);
  const int64_t n_valid = j1 - j < kPanel ? j1 - j : kPanel;
  DirectBlocks direct;
  alignas(64) int32_t offsets[kPanel];
  for (int r = 0; r < kPanel; ++r) {
    const int64_t row = j + (r < n_valid ? r : n_valid - 1);
    direct.row[r] = base + static_cast<uint64_t>(row) * w.row_bytes;
    offsets[r] = static_cast<int32_t>(static_cast<uint64_t>(row - j) * w.row_bytes);
  }
  direct.d_offsets = _mm512_load_si512(offsets);
  direct.prefetch_ahead = static_cast<int64_t>(kPanel * w.row_bytes);
  return direct;
}

__mmask16 valid_mask(int64_t j, int64_t j1) {
  const int64_t n = j1 - j < kPanel ? j1 - j : kPanel;
  return n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1u);
}

}  // namespace

void rows_q8_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y,
               int64_t ldy) {
  const int64_t nb = a.cols / 32;
  if (a.m <= kMr) {  // decode: transpose in registers, stream the weights once
    for (int64_t j = j0; j < j1; j += kPanel) {
      panel_all_rows(panel_at(w, j, j1), a, nb, y + j, ldy, valid_mask(j, j1));
    }
    return;
  }
  // Prefill: pack two panels, then run every x row over them.
  PackBuffer buffer(2 * nb);
  PackedBlock* p0 = buffer.p;
  PackedBlock* p1 = buffer.p + nb;
  for (int64_t j = j0; j < j1; j += 2 * kPanel) {
    const DirectBlocks d0 = panel_at(w, j, j1);
    for (int64_t b = 0; b < nb; ++b) d0.load(b, p0[b].w, &p0[b].d);
    if (j + kPanel >= j1) {
      panel_all_rows(PackedBlocks{p0}, a, nb, y + j, ldy, valid_mask(j, j1));
      continue;
    }
    const DirectBlocks d1 = panel_at(w, j + kPanel, j1);
    for (int64_t b = 0; b < nb; ++b) d1.load(b, p1[b].w, &p1[b].d);
    wide_all_rows(p0, p1, a, nb, y + j, ldy, valid_mask(j, j1), valid_mask(j + kPanel, j1));
  }
}

}  // namespace ridge::kernels::avx512
