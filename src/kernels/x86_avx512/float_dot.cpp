// AVX-512 matmul for F32 / F16 / BF16 weights with f32 activations.
//
// Each y[i][j] is a dot product accumulated in one 16-lane f32 register: lane l sums
// x[k] * w[k] for k = l, l + 16, ... with FMA in k order (the K % 16 tail via masked loads that
// read zeros), then the lanes are added in a fixed tree (8+8, 4+4, 2+2, 1+1). A tile computes
// MR x-rows against NR w-rows, but every (i, j) goes through exactly this sequence, so the value
// does not depend on MR, NR, m, the tiling or the thread count (batch invariance).
//
// F16 is widened with F16C (vcvtph2ps); BF16 by a 16-bit left shift, which is exact. For F16 and
// BF16 weights the driver has already rounded x to f16 / bf16 (as ggml does), so every product
// is exact and only the summation order below defines the result.
//
// BF16 with K % 32 == 0 runs vdpbf16ps over 32 values per step, as llama.cpp's AVX512-BF16 GEMM
// does: lane l adds the product of pair l's odd element, then of its even element (pair l =
// elements 2l, 2l + 1 of each 32-wide step), each with one rounding, subnormals flushed. Decode
// and prefill tiles both use it (one instruction per pair instead of two FMAs and the shuffles
// that split x into odd and even: ~2x the prefill rate). Any other order
// differs from llama.cpp in the last bit now and then, which the bf16 rounding of the next
// matmul's input turns into 2^-8 relative jumps (up to ~3e-3 in the tiny models' probabilities).
//
// GCC 12's _mm512_undefined_*() self-initializes a local, which -Wuninitialized reports when
// intrinsics such as _mm512_cvtph_ps are inlined at -O3 (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <type_traits>
#include <vector>

#include "kernels/float_tile_rows.h"
#include "kernels/x86_avx512/avx512.h"
#include "kernels/x86_avx512/quant_simd.h"

namespace ridge::kernels::avx512 {
namespace {

struct F32W {
  static constexpr int kBytes = 4;
  static __m512 load(const void* p) { return _mm512_loadu_ps(p); }
  static __m512 load_tail(const void* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
};
struct F16W {
  static constexpr int kBytes = 2;
  static __m512 load(const void* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  static __m512 load_tail(const void* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
};
struct Bf16W {
  static constexpr int kBytes = 2;
  static __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m512 load(const void* p) {
    return widen(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  static __m512 load_tail(const void* p, __mmask16 m) { return widen(_mm256_maskz_loadu_epi16(m, p)); }
};

// The fixed lane tree: (lo 8 + hi 8), then (lo 4 + hi 4), then (0+2, 1+3), then 0+1.
inline float reduce16(__m512 v) { return quant_avx512::hsum16(v); }

// BF16, K % 32 == 0: y[i][j] in the pair order described at the top, which is vdpbf16ps's:
// per lane, acc + odd product, then + even product, each an FMA with one rounding (bf16
// products are exact in f32), inputs and results subnormal-flushed (DAZ/FTZ). x rows are bf16,
// packed once per call (pack_bf16_rows).
template <int MR, int NR>
void tile_bf16_pairs(const uint16_t* x, int64_t ldx, const TileRows& w, int64_t cols, float* y,
                     int64_t ldy) {
  __m512 acc[MR][NR];
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < cols; k += 32) {
    __m512bh wv[NR];
    for (int j = 0; j < NR; ++j) {
      const uint8_t* p = w.row(j) + k * 2;
      _mm_prefetch(reinterpret_cast<const char*>(p) + w.ahead, _MM_HINT_T1);
      if (w.l1_ahead != 0) _mm_prefetch(reinterpret_cast<const char*>(p) + w.l1_ahead, _MM_HINT_T0);
      wv[j] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(p));
    }
    for (int i = 0; i < MR; ++i) {
      const auto xv = reinterpret_cast<__m512bh>(_mm512_loadu_si512(x + i * ldx + k));
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv[j], xv);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) y[i * ldy + j * w.y_step] = reduce16(acc[i][j]);
  }
}

// m rows of x (f32 already rounded to bf16 by the driver; cols % 32 == 0) as bf16, exactly.
void pack_bf16_rows(const float* x, int64_t ldx, int64_t m, int64_t cols, uint16_t* out) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t k = 0; k < cols; k += 32) {
      const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i * ldx + k + 16), _mm512_loadu_ps(x + i * ldx + k));
      _mm512_storeu_si512(out + i * cols + k, reinterpret_cast<__m512i>(v));
    }
  }
}

// y[i][j] for i in [0, MR) x rows, j in [0, NR) weight rows.
// f32 x: every (i, j) through the sequence described at the top.
template <typename W, int MR, int NR>
void tile_f32x(const float* x, int64_t ldx, const TileRows& w, int64_t cols, float* y, int64_t ldy) {
  __m512 acc[MR][NR];
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  int64_t k = 0;
  for (; k + 16 <= cols; k += 16) {
    if ((k * W::kBytes) % 64 == 0) {
      for (int j = 0; j < NR; ++j) {
        const char* at = reinterpret_cast<const char*>(w.row(j) + k * W::kBytes);
        _mm_prefetch(at + w.ahead, _MM_HINT_T1);
        if (w.l1_ahead != 0) _mm_prefetch(at + w.l1_ahead, _MM_HINT_T0);
      }
    }
    __m512 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = W::load(w.row(j) + k * W::kBytes);
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_loadu_ps(x + i * ldx + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  if (k < cols) {
    const auto mask = static_cast<__mmask16>((1u << (cols - k)) - 1u);
    __m512 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = W::load_tail(w.row(j) + k * W::kBytes, mask);
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_maskz_loadu_ps(mask, x + i * ldx + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) y[i * ldy + j * w.y_step] = reduce16(acc[i][j]);
  }
}

// x is f32 (XT = float), or bf16 pairs for BF16 weights with cols % 32 == 0 (XT = uint16_t).
template <typename W, int MR, int NR, typename XT>
void tile(const XT* x, int64_t ldx, const TileRows& w, int64_t cols, float* y, int64_t ldy) {
  if constexpr (std::is_same_v<XT, uint16_t>) {
    return tile_bf16_pairs<MR, NR>(x, ldx, w, cols, y, ldy);
  } else {
    tile_f32x<W, MR, NR>(x, ldx, w, cols, y, ldy);
  }
}

constexpr int kMr = 6;  // x rows per tile: 6 x 4 accumulators + 4 weights fit in 32 registers
constexpr int kNr = 4;

template <typename W, int NR, typename XT>
void tile_rows(int64_t mr, const XT* x, int64_t ldx, const TileRows& w, int64_t cols, float* y,
               int64_t ldy) {
  switch (mr) {
    case 1: return tile<W, 1, NR>(x, ldx, w, cols, y, ldy);
    case 2: return tile<W, 2, NR>(x, ldx, w, cols, y, ldy);
    case 3: return tile<W, 3, NR>(x, ldx, w, cols, y, ldy);
    case 4: return tile<W, 4, NR>(x, ldx, w, cols, y, ldy);
    case 5: return tile<W, 5, NR>(x, ldx, w, cols, y, ldy);
    default: return tile<W, kMr, NR>(x, ldx, w, cols, y, ldy);
  }
}

// Weight rows are taken in blocks that stay in L2 while every x row passes over them, so a
// weight byte comes from memory once per call whatever m is.
constexpr uint64_t kWeightBlockBytes = 256 * 1024;

// x rows (XT: f32, or bf16 pairs), m of them with leading dimension ldx, and `cols` columns.
template <typename XT>
struct XRows {
  const XT* p;
  int64_t ldx, m, cols;
};

// Decode: tiles of kFloatDecodeStreams far-apart rows (float_tile_rows.h).
template <typename W, typename XT>
void rows_decode(const WeightView& wv, const XRows<XT>& x, int64_t j0, int64_t j1, float* y,
                 int64_t ldy) {
  constexpr int kS = kFloatDecodeStreams;
  for_decode_tiles(
      static_cast<const uint8_t*>(wv.data), wv.row_bytes, j0, j1,
      [&](const TileRows& w, int64_t j) {
        switch (x.m) {
          case 1: return tile<W, 1, kS>(x.p, x.ldx, w, x.cols, y + j, ldy);
          case 2: return tile<W, 2, kS>(x.p, x.ldx, w, x.cols, y + j, ldy);
          default: return tile<W, 3, kS>(x.p, x.ldx, w, x.cols, y + j, ldy);
        }
      },
      [&](const TileRows& w, int64_t j) { tile_rows<W, 1>(x.m, x.p, x.ldx, w, x.cols, y + j, ldy); });
}

template <typename W, typename XT>
void rows_tiled(const WeightView& wv, const XRows<XT>& x, int64_t j0, int64_t j1, float* y,
                int64_t ldy) {
  if (x.m <= kFloatDecodeMaxM) return rows_decode<W>(wv, x, j0, j1, y, ldy);
  const auto* base = static_cast<const uint8_t*>(wv.data);
  int64_t jb_rows = static_cast<int64_t>(kWeightBlockBytes / (wv.row_bytes + 1));
  jb_rows = jb_rows < kNr ? kNr : jb_rows / kNr * kNr;
  for (int64_t jb = j0; jb < j1; jb += jb_rows) {
    const int64_t jb_end = jb + jb_rows < j1 ? jb + jb_rows : j1;
    for (int64_t i = 0; i < x.m; i += kMr) {
      const int64_t mr = x.m - i < kMr ? x.m - i : kMr;
      const XT* xi = x.p + i * x.ldx;
      int64_t j = jb;
      for (; j + kNr <= jb_end; j += kNr) {
        tile_rows<W, kNr>(mr, xi, x.ldx, adjacent_rows(base, wv.row_bytes, j, kNr), x.cols,
                          y + i * ldy + j, ldy);
      }
      for (; j < jb_end; ++j) {
        tile_rows<W, 1>(mr, xi, x.ldx, adjacent_rows(base, wv.row_bytes, j, 1), x.cols,
                        y + i * ldy + j, ldy);
      }
    }
  }
}

template <typename W>
void rows_float(const WeightView& wv, const Acts& a, int64_t j0, int64_t j1, float* y,
                int64_t ldy) {
  if constexpr (std::is_same_v<W, Bf16W>) {
    if (a.cols % 32 == 0) {  // vdpbf16ps tiles read x as bf16 pairs, packed once per call
      thread_local std::vector<uint16_t> packed;
      packed.resize(static_cast<size_t>(a.m * a.cols));
      pack_bf16_rows(a.f32, a.ldx, a.m, a.cols, packed.data());
      return rows_tiled<W>(wv, XRows<uint16_t>{packed.data(), a.cols, a.m, a.cols}, j0, j1, y, ldy);
    }
  }
  rows_tiled<W>(wv, XRows<float>{a.f32, a.ldx, a.m, a.cols}, j0, j1, y, ldy);
}

}  // namespace

void rows_f32(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_float<F32W>(w, a, j0, j1, y, ldy);
}
void rows_f16(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_float<F16W>(w, a, j0, j1, y, ldy);
}
void rows_bf16(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_float<Bf16W>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::avx512
