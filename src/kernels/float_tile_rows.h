// Which weight rows a float matmul tile reads (x86_avx2/ and x86_avx512/ float_dot.cpp), and how
// decode spreads them into streams. No intrinsics: plain addressing shared by both ISAs' files.
#pragma once

#include <cstdint>

namespace ridge::kernels {
namespace {  // internal linkage: each ISA file gets its own copy

// The NR weight rows of a tile: row j at w + j * stride, its output at y + j * y_step, the bytes
// ahead of each read to prefetch into L2 (a tile's rows may be adjacent or far apart), and those
// to prefetch into L1 as well (0: none).
struct TileRows {
  const uint8_t* w;
  int64_t stride;
  int64_t ahead;
  int64_t y_step;
  int64_t l1_ahead = 0;
  const uint8_t* row(int j) const { return w + j * stride; }
};

// Rows [j, j + nr) side by side: one contiguous region read column-wise, which the hardware
// prefetcher does not follow, so the same lines of the next nr rows are prefetched.
inline TileRows adjacent_rows(const uint8_t* base, uint64_t row_bytes, int64_t j, int nr) {
  const auto rb = static_cast<int64_t>(row_bytes);
  return {base + j * rb, rb, nr * rb, 1};
}

// Decode (m <= kFloatDecodeMaxM): the rows [j0, j1) a thread is handed are cut into
// kFloatDecodeStreams contiguous parts, and tile t takes row t of each part, so a tile reads
// kFloatDecodeStreams long sequential streams, each prefetched kFloatStreamAhead bytes ahead, as
// the probe's best read loops do. Tiles of adjacent rows instead read one region column-wise and
// restart the prefetchers every tile (docs/tuning.md, "Float decode streams").
inline constexpr int kFloatDecodeMaxM = 3;
inline constexpr int kFloatDecodeStreams = 4;
inline constexpr int64_t kFloatStreamAhead = 2048;
// And into L1 (the AVX-512 tiles; AVX2 was not measured and does not): 512 bytes on in each of
// the 4 streams, 2 KiB in all, as the quantized streams had then (kStreamL1Ahead, now 4 KiB;
// docs/tuning.md, "Float decode streams").
inline constexpr int64_t kFloatStreamL1Ahead = 512;

// Calls tile(rows, y_offset) for every decode tile of [j0, j1): `part` tiles of
// kFloatDecodeStreams far-apart rows, then each leftover row alone (a TileRows of one row).
template <typename Tile, typename Single>
void for_decode_tiles(const uint8_t* base, uint64_t row_bytes, int64_t j0, int64_t j1,
                      const Tile& tile, const Single& single) {
  const auto rb = static_cast<int64_t>(row_bytes);
  const int64_t part = (j1 - j0) / kFloatDecodeStreams;
  for (int64_t t = 0; t < part; ++t) {
    tile(TileRows{base + (j0 + t) * rb, part * rb, kFloatStreamAhead, part, kFloatStreamL1Ahead}, j0 + t);
  }
  for (int64_t j = j0 + part * kFloatDecodeStreams; j < j1; ++j) {
    single(adjacent_rows(base, row_bytes, j, 1), j);
  }
}

}  // namespace
}  // namespace ridge::kernels
