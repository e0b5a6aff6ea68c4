// The storage types of the KV cache: the one vocabulary the cache, the attention kernels, the
// cost model and the CLI's --kv-type share.
//   f32   4 bytes per value (tests, references)
//   f16   2 bytes per value (the default, as llama.cpp)
//   bf16  2 bytes per value (the top half of the f32)
//   q8_0  GGUF Q8_0 blocks along head_dim: 32 values in 34 bytes (an fp16 scale d = amax / 127,
//         then 32 int8 q = round(x / d); value = d * q); head_dim a multiple of 32
//   fp8   1 byte per value (E4M3): a GPU backend's; the CPU cache refuses it
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace ridge::kv {

enum class KvType : uint8_t { kF32, kF16, kBF16, kQ8_0, kFP8 };

inline constexpr int64_t kQ8Block = 32;       // values per q8_0 block
inline constexpr int64_t kQ8BlockBytes = 34;  // fp16 scale + 32 int8

// "f32", "f16", "bf16", "q8_0", "fp8" (also "f8", "fp8_e4m3"), any case; a usage error naming
// the choices.
Result<KvType> kv_type_from_name(std::string_view name);
std::string_view kv_type_name(KvType type);
// Bytes per stored value, scales included (q8_0: 34 / 32).
double kv_bytes_per_element(KvType type);
// Bytes of one token's K (or V) row of one head; 0 if head_dim does not suit the type (q8_0
// needs a multiple of 32) or is out of range.
uint64_t kv_row_bytes(KvType type, int64_t head_dim);
// Whether the CPU's cache stores this type (all but fp8).
bool kv_type_on_cpu(KvType type);

}  // namespace ridge::kv
