// Block ids and the two block spaces of a KV cache (kv_cache.h): the main one, and the window
// space where sliding-window layers keep their K/V apart so that their old blocks can be freed.
#pragma once

#include <cstdint>

namespace ridge::kv {

using BlockId = int32_t;
inline constexpr BlockId kNoBlock = -1;

enum class KvSpace : uint8_t { kMain, kWindow };

}  // namespace ridge::kv
