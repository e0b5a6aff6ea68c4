// AMX-INT8 tiles for the int8 prefill GEMMs (panel_q8.h, kquant_panel.h). Include only from
// x86_avx512/ files (compiled with the AVX-512 and AMX flags); run only when
// kernels::amx_enabled() (CPUID, XCR0 and Linux's permission checked in base/cpu_features.cpp).
//
// The kernels' panels already hold, per 4-element group g, one 64-byte register whose 32-bit lane r
// is the 4 quants of weight row r (unsigned bytes): a block's kGroups registers, one after another,
// are exactly an AMX B tile (kGroups rows of 64 bytes). The A tile is 16 activation rows'
// 4 kGroups int8 quants of the same block, read in place (stride: the activations' row length).
// With the weights made signed (u - kOffset, once per packed block), TDPBSSD then gives C[i][r] =
// the exact integer dot of x row i with weight row r over the block: the integer sums vpdpbusd
// reaches from its start -kOffset * sum(x), 16 x rows at once, with nothing to add. The callers
// take the same f32 steps as their VNNI paths: the same bits.
//
// Tiles: 0 = A (16 x kBytes), 1 = B (kBytes / 4 x 64 bytes), 2 = C (16 x 16 int32) for even
// blocks, 4, 5 and 3 for odd ones: the tiles are not renamed, so a load into the tile a running
// dot product reads waits for it (one set of A / B tiles: 1.0x VNNI on BM_Gemm Q8_0; two: 1.3x).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ridge::kernels::avx512 {
namespace {

constexpr int kAmxRows = 16;  // x rows per A tile

// The tile configuration of one kernel (palette 1) for blocks of k_bytes int8 (16, 32 or 64),
// loaded for the calling thread by the constructor and released by the destructor (a released
// thread's context switch skips the 8 KiB of tile state); nothing at all when `on` is false.
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
    for (int t = 2; t < 4; ++t) {
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

// The tile instructions, written out: GCC's intrinsics paste their tile numbers into the
// instruction as macro arguments. A tile load does not tell the compiler which memory it reads (a
// strided region), so a kernel calls amx_fence() once, after the stores of what its tiles read
// (its packed panels) and before its first load; a "memory" clobber on every load instead would
// keep the kernels' accumulators in memory (measured: spilled, no faster than VNNI). A tile store
// names the 1 KiB it writes.
#define RIDGE_TILE_LOAD(tile, base, stride)                                                   \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #tile ::"r"(static_cast<const void*>(base)), \
                   "r"(static_cast<int64_t>(stride)))
#define RIDGE_TILE_STORE(tile, out)                                                           \
  __asm__ volatile("tilestored %%tmm" #tile ", (%1,%2,1)"                                     \
                   : "=m"(*out)                                                               \
                   : "r"(static_cast<void*>(out)), "r"(static_cast<int64_t>(64)))
#define RIDGE_TILE_ZERO(tile) __asm__ volatile("tilezero %%tmm" #tile ::)
#define RIDGE_TILE_DPBSSD(c, a, b) __asm__ volatile("tdpbssd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

inline __attribute__((always_inline)) void amx_fence() { __asm__ volatile("" ::: "memory"); }

using TileDots = int32_t[16][16];  // a C tile stored: 16 rows of 16 int32 lanes

// C tile kC (2 or 3) = the integer dots of the 16 x rows at x (row stride x_stride bytes) with
// the B tile at w (kBytes / 4 rows of 64 bytes).
template <int kC>
inline __attribute__((always_inline)) void amx_block_dot(const int8_t* x, int64_t x_stride,
                                                         const void* w) {
  static_assert(kC == 2 || kC == 3);
  if constexpr (kC == 2) {
    RIDGE_TILE_LOAD(0, x, x_stride);
    RIDGE_TILE_LOAD(1, w, 64);
    RIDGE_TILE_ZERO(2);
    RIDGE_TILE_DPBSSD(2, 0, 1);
  } else {
    RIDGE_TILE_LOAD(4, x, x_stride);
    RIDGE_TILE_LOAD(5, w, 64);
    RIDGE_TILE_ZERO(3);
    RIDGE_TILE_DPBSSD(3, 4, 5);
  }
}

// The int32 dots of C tile kC into out (16 rows of 16 lanes).
template <int kC>
inline __attribute__((always_inline)) void amx_store(TileDots* out) {
  static_assert(kC == 2 || kC == 3);
  if constexpr (kC == 2) {
    RIDGE_TILE_STORE(2, out);
  } else {
    RIDGE_TILE_STORE(3, out);
  }
}

}  // namespace
}  // namespace ridge::kernels::avx512
