// Block ids and the two block spaces of a KV cache (kv_cache.h): the main one, and the window
// space where sliding-window layers keep their K/V apart so that their old blocks can be freed.
#pragma once

#include <cstdint>

namespace ridge::kv {

using BlockId = int32_t;
inline constexpr BlockId kNoBlock = -1;

enum class KvSpace : uint8_t { kMain, kWindow };

// The first block a position reads through a window of `window` positions (itself and the
// window - 1 before it).
inline int64_t first_window_block(int64_t pos, int64_t window, int64_t block_size) {
  return (pos - window + 1 > 0 ? pos - window + 1 : 0) / block_size;
}

// The most window blocks one sequence holds while computing n positions: those of the first
// one's window through the last one's block.
inline int64_t window_blocks_for(int64_t window, int64_t n, int64_t block_size) {
  return (window - 1 + n + block_size - 1) / block_size + 1;
}

}  // namespace ridge::kv
