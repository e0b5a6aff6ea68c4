// AVX2 matmul of the grid formats (kernels/quant/grid_formats.h: IQ1-IQ3, TQ1_0, TQ2_0) with Q8_K
// activations, bit-identical to the reference (kernels/quant/grid_rows.cpp): per super-block the
// exact integer isum = sum_s ls_s * sum_{e in s} q_e x_e, acc = acc + ((d * kUnit) * dx) *
// float(isum) (a rounded product, then a rounded sum).
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
#include "kernels/x86_avx2/grid_chunks.h"
#include "kernels/x86_avx2/panel_rows.h"
#include "kernels/x86_avx2/quant_simd.h"

namespace ridge::kernels::quant_avx2 {
namespace {

using grid_simd::Chunk;
using grid_simd::chunk;

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
    d[r] = F::scale(blk) * F::kUnit;
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
      store_lanes(y + i * ldy + j, _mm256_loadu_ps(acc + i * kPanel), n_valid);
    }
  }
}

}  // namespace

#define RIDGE_GRID_ROWS(T, F, n) \
  void rows_##n(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) { rows<F>(w, a, j0, j1, y, ldy); }
RIDGE_GRID_FORMATS(RIDGE_GRID_ROWS)
#undef RIDGE_GRID_ROWS

}  // namespace ridge::kernels::quant_avx2
