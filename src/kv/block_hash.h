// Chained content hashes of full KV blocks, the keys of the prefix cache.
//
// A block's hash covers its parent's hash and its own token ids, so equal hashes mean (up to a
// 64-bit collision, which the pool additionally guards against by comparing the tokens and the
// parent hash) the same tokens at the same positions after the same prefix.
#pragma once

#include <cstdint>
#include <span>

namespace ridge::kv {

using BlockHash = uint64_t;

// Parent hash of a sequence's first block.
inline constexpr BlockHash kRootBlockHash = 0x52494447454b5631ULL;  // "RIDGEKV1"

// XXH3-64 of the block's token ids (native byte order), seeded with the parent's hash.
BlockHash hash_block(BlockHash parent, std::span<const int32_t> tokens);

}  // namespace ridge::kv
