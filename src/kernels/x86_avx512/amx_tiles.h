// AMX-INT8 tiles for the int8 prefill GEMMs (panel_q8.h, kquant_panel.h). Include only from
// x86_avx512/ files (compiled with the AVX-512 and AMX flags); run only when
// kernels::amx_enabled() (CPUID, XCR0 and Linux's permission checked in base/cpu_features.cpp).
//
// The kernels' panels already hold, per 4-element group g, one 64-byte register whose 32-bit lane r
// is the 4 quants of weight row r: consecutive groups' registers, one after another, are exactly an
// AMX B tile (one row of 64 bytes per group). The A tile is 16 activation rows' int8 quants of the
// same elements, read in place (stride: the activations' row length). With the weights made
// signed (q + the format's offset, once per packed panel), TDPBSSD gives C[i][r] = the exact
// integer dot of x row i with weight row r over those elements: the integer sums the vpdpbusd
// paths reach, 16 x rows at once. The callers take the same f32 steps as their VNNI paths: the
// same bits.
//
// Tiles are not renamed: a load into a tile that a running dot product reads waits for it. So
// the kernels alternate two A and two B tiles (0 / 4 and 1 / 5); with one set the tiles were no
// faster than VNNI (docs/tuning.md, "AMX tiles"). C tiles: 2, 3, 6, 7.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/kernels.h"

namespace ridge::kernels::avx512 {
namespace {

constexpr int kAmxRows = 16;  // x rows per A tile

// The x rows of a prefill that go through the tiles: whole groups of 16 while AMX is on
// (kernels::amx_enabled()); the callers' VNNI paths take the rest.
inline int64_t amx_row_count(int64_t m) { return amx_enabled() ? m / kAmxRows * kAmxRows : 0; }

// The tile configuration (palette 1): A tiles 0 and 4 of 16 rows x k_bytes int8 (16, 32 or 64),
// B tiles 1 and 5 of k_bytes / 4 rows x 64 bytes, C tiles 2, 3, 6, 7 of 16 x 16 int32. Loaded
// for the calling thread by the constructor and released by the destructor (a released thread's
// context switch skips the 8 KiB of tile state); nothing at all when `on` is false.
class AmxTiles {
 public:
  AmxTiles(int k_bytes, bool on) : on_(on) {
    if (!on) return;
    struct alignas(64) Config {
      uint8_t palette = 1;
      uint8_t start_row = 0;
      uint8_t reserved[14] = {};
      uint16_t colsb[16] = {};
      uint8_t rows[16] = {};
    } config;
    for (int t : {0, 4}) {
      config.colsb[t] = static_cast<uint16_t>(k_bytes);
      config.rows[t] = kAmxRows;
      config.colsb[t + 1] = 64;
      config.rows[t + 1] = static_cast<uint8_t>(k_bytes / 4);
    }
    for (int t : {2, 3, 6, 7}) {
      config.colsb[t] = 64;
      config.rows[t] = kAmxRows;
    }
    __asm__ volatile("ldtilecfg %0" ::"m"(config));
  }
  ~AmxTiles() {
    if (on_) __asm__ volatile("tilerelease" ::: "memory");
  }
  AmxTiles(const AmxTiles&) = delete;
  AmxTiles& operator=(const AmxTiles&) = delete;

 private:
  bool on_;
};

using TileDots = int32_t[16][16];  // a C tile stored: 16 rows of 16 int32 lanes

// The tile instructions, written out with the tile numbers as immediates (GCC's intrinsics are
// macros that need literal numbers). A tile load does not tell the compiler which memory it reads
// (a strided region), so a kernel calls amx_fence() once, after the stores of what its tiles read
// (its packed panels) and before its first load; a "memory" clobber on every load instead kept
// the accumulators in memory. A tile store names the 1 KiB it writes.
template <int kT>
inline __attribute__((always_inline)) void tile_load(const void* base, int64_t stride) {
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm%c2" ::"r"(base), "r"(stride), "i"(kT));
}
template <int kT>
inline __attribute__((always_inline)) void tile_store(TileDots* out) {
  __asm__ volatile("tilestored %%tmm%c3, (%1,%2,1)"
                   : "=m"(*out)
                   : "r"(static_cast<void*>(out)), "r"(int64_t{64}), "i"(kT));
}
template <int kT>
inline __attribute__((always_inline)) void tile_zero() {
  __asm__ volatile("tilezero %%tmm%c0" ::"i"(kT));
}
// C += A . B, signed bytes both.
template <int kC, int kA, int kB>
inline __attribute__((always_inline)) void tile_dpbssd() {
  __asm__ volatile("tdpbssd %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(kC), "i"(kA), "i"(kB));
}

inline __attribute__((always_inline)) void amx_fence() { __asm__ volatile("" ::: "memory"); }

// C tile kC (2 or 3) = the integer dots of the 16 x rows at x (row stride x_stride bytes) with the
// B tile at w; C tile 2 takes A / B tiles 0 / 1, C tile 3 takes 4 / 5.
template <int kC>
inline __attribute__((always_inline)) void amx_block_dot(const int8_t* x, int64_t x_stride,
                                                         const void* w) {
  static_assert(kC == 2 || kC == 3);
  constexpr int kA = kC == 2 ? 0 : 4;
  tile_load<kA>(x, x_stride);
  tile_load<kA + 1>(w, 64);
  tile_zero<kC>();
  tile_dpbssd<kC, kA, kA + 1>();
}

// n dots through the two tile sets, two stages in flight: while dot k - 1's C tile, stored, takes
// the caller's f32 steps, dot k's C tile is stored and dot k + 1 computed (even dots in C tile 2,
// odd ones in 3). dot_x(k) / dot_w(k): the A rows (stride x_stride) and the B tile of dot k;
// finish(dots, k) consumes dot k's stored tile, in order k = 0 .. n - 1.
template <typename DotX, typename DotW, typename Finish>
inline __attribute__((always_inline)) void amx_pipeline(int64_t n, int64_t x_stride,
                                                        const DotX& dot_x, const DotW& dot_w,
                                                        const Finish& finish) {
  alignas(64) TileDots dots[2];
  amx_fence();
  amx_block_dot<2>(dot_x(0), x_stride, dot_w(0));
  if (n > 1) amx_block_dot<3>(dot_x(1), x_stride, dot_w(1));
  tile_store<2>(&dots[0]);
  for (int64_t k = 1;; k += 2) {  // here: dot k in C tile 3, dot k - 1 in dots[0]
    if (k >= n) {
      finish(dots[0], k - 1);
      break;
    }
    if (k + 1 < n) amx_block_dot<2>(dot_x(k + 1), x_stride, dot_w(k + 1));
    tile_store<3>(&dots[1]);
    finish(dots[0], k - 1);
    if (k + 1 >= n) {
      finish(dots[1], k);
      break;
    }
    if (k + 2 < n) amx_block_dot<3>(dot_x(k + 2), x_stride, dot_w(k + 2));
    tile_store<2>(&dots[0]);
    finish(dots[1], k);
  }
}

}  // namespace
}  // namespace ridge::kernels::avx512
