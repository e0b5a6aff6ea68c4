#include "kv/block_hash.h"

#include <xxhash.h>

namespace ridge::kv {

BlockHash hash_block(BlockHash parent, std::span<const int32_t> tokens) {
  // Seeding with the parent chains the hashes without copying the tokens into a buffer.
  return XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(), parent);
}

}  // namespace ridge::kv
