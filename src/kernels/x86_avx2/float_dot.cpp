// AVX2 matmul for F32 / F16 / BF16 weights with f32 activations.
//
// Same scheme as x86_avx512/float_dot.cpp with 8 lanes: each y[i][j] is accumulated in one
// 8-lane f32 register, lane l summing x[k] * w[k] for k = l, l + 8, ... with FMA in k order (the
// K % 8 tail reads zeros), then lanes are added in a fixed tree (4+4, 2+2, 1+1). Every (i, j)
// goes through this exact sequence whatever the tile shape: batch invariant.
#include <immintrin.h>

#include <cstring>

#include "kernels/float_tile_rows.h"
#include "kernels/x86_avx2/avx2.h"
#include "kernels/x86_avx2/quant_simd.h"

namespace ridge::kernels::avx2 {
namespace {

struct F32W {
  static constexpr int kBytes = 4;
  static __m256 load(const void* p) { return _mm256_loadu_ps(static_cast<const float*>(p)); }
};
struct F16W {
  static constexpr int kBytes = 2;
  static __m256 load(const void* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  }
};
struct Bf16W {
  static constexpr int kBytes = 2;
  static __m256 load(const void* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
};

// Loads n < 8 elements, zero-filling the rest (through a stack copy: AVX2 has no 16-bit masks).
template <typename W>
__m256 load_tail(const void* p, int64_t n) {
  alignas(32) uint8_t tmp[32] = {};
  std::memcpy(tmp, p, static_cast<size_t>(n) * W::kBytes);
  return W::load(tmp);
}

inline float reduce8(__m256 v) { return quant_avx2::hsum8(v); }

template <typename W, int MR, int NR>
void tile(const float* x, int64_t ldx, const TileRows& w, int64_t cols, float* y, int64_t ldy) {
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  }
  int64_t k = 0;
  for (; k + 8 <= cols; k += 8) {
    if ((k * W::kBytes) % 64 == 0) {
      for (int j = 0; j < NR; ++j) {
        _mm_prefetch(reinterpret_cast<const char*>(w.row(j) + k * W::kBytes) + w.ahead, _MM_HINT_T1);
      }
    }
    __m256 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = W::load(w.row(j) + k * W::kBytes);
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_loadu_ps(x + i * ldx + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  if (k < cols) {
    __m256 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = load_tail<W>(w.row(j) + k * W::kBytes, cols - k);
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = load_tail<F32W>(x + i * ldx + k, cols - k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) y[i * ldy + j * w.y_step] = reduce8(acc[i][j]);
  }
}

constexpr int kMr = 4;  // 4 x 2 accumulators + 2 weights + 1 x in 16 registers
constexpr int kNr = 2;

template <typename W, int NR>
void tile_rows(int64_t mr, const float* x, int64_t ldx, const TileRows& w, int64_t cols, float* y,
               int64_t ldy) {
  switch (mr) {
    case 1: return tile<W, 1, NR>(x, ldx, w, cols, y, ldy);
    case 2: return tile<W, 2, NR>(x, ldx, w, cols, y, ldy);
    case 3: return tile<W, 3, NR>(x, ldx, w, cols, y, ldy);
    default: return tile<W, kMr, NR>(x, ldx, w, cols, y, ldy);
  }
}

constexpr uint64_t kWeightBlockBytes = 256 * 1024;  // weight rows kept in L2 across x rows

template <typename W>
void rows_float(const WeightView& wv, const Acts& a, int64_t j0, int64_t j1, float* y,
                int64_t ldy) {
  const auto* base = static_cast<const uint8_t*>(wv.data);
  if (a.m <= kFloatDecodeMaxM) {  // tiles of far-apart rows (float_tile_rows.h)
    const auto mr = a.m;
    for_decode_tiles(
        base, wv.row_bytes, j0, j1,
        [&](const TileRows& w, int64_t j) { tile_rows<W, kFloatDecodeStreams>(mr, a.f32, a.ldx, w, a.cols, y + j, ldy); },
        [&](const TileRows& w, int64_t j) { tile_rows<W, 1>(mr, a.f32, a.ldx, w, a.cols, y + j, ldy); });
    return;
  }
  int64_t jb_rows = static_cast<int64_t>(kWeightBlockBytes / (wv.row_bytes + 1));
  jb_rows = jb_rows < kNr ? kNr : jb_rows / kNr * kNr;
  for (int64_t jb = j0; jb < j1; jb += jb_rows) {
    const int64_t jb_end = jb + jb_rows < j1 ? jb + jb_rows : j1;
    for (int64_t i = 0; i < a.m; i += kMr) {
      const int64_t mr = a.m - i < kMr ? a.m - i : kMr;
      const float* x = a.f32 + i * a.ldx;
      int64_t j = jb;
      for (; j + kNr <= jb_end; j += kNr) {
        tile_rows<W, kNr>(mr, x, a.ldx, adjacent_rows(base, wv.row_bytes, j, kNr), a.cols,
                          y + i * ldy + j, ldy);
      }
      for (; j < jb_end; ++j) {
        tile_rows<W, 1>(mr, x, a.ldx, adjacent_rows(base, wv.row_bytes, j, 1), a.cols,
                        y + i * ldy + j, ldy);
      }
    }
  }
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

}  // namespace ridge::kernels::avx2
