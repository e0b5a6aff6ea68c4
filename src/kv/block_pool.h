// BlockPool: the ids, reference counts and prefix-cache entries of the KV cache's blocks.
// It never touches a tensor: block b holds the KV of token slots [b * block_size, (b+1) *
// block_size) in whatever storage the model owns (kv/kv_cache.h).
//
// Free blocks (reference count 0) sit in one queue that is also the eviction order:
//   - a block freed without a cache entry goes to the head (reused first: it holds nothing);
//   - a block freed with a cache entry goes to the tail (least recently used is evicted first).
// allocate() takes the head; if that block still has a cache entry, the entry is dropped
// (evicted). A cached block that is hit while free leaves the queue (acquire()). So cached
// content lives as long as possible and costs nothing when memory is needed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/block_hash.h"
#include "kv/kv_space.h"

namespace ridge::kv {


struct PrefixCacheStats {
  int64_t n_query_tokens = 0;  // prompt tokens looked up in the cache
  int64_t n_hit_tokens = 0;    // of those, tokens whose KV was reused
  int64_t n_evictions = 0;     // cached blocks dropped to make room
  double hit_rate() const {
    return n_query_tokens > 0 ? static_cast<double>(n_hit_tokens) / n_query_tokens : 0.0;
  }
};

class BlockPool {
 public:
  // Validates sizes given by a user (CLI, server config); usage error when not positive.
  static Result<BlockPool> create(int32_t n_blocks, int32_t block_size);
  // Contract: n_blocks > 0, block_size > 0 (checked).
  BlockPool(int32_t n_blocks, int32_t block_size);

  int32_t n_blocks() const { return n_blocks_; }
  int32_t block_size() const { return block_size_; }
  // Blocks with reference count 0, including cached ones that allocate() may evict.
  int32_t n_free() const { return n_free_; }
  int32_t n_used() const { return n_blocks_ - n_free_; }
  // Blocks holding a cache entry (in use or free).
  int32_t n_cached() const { return static_cast<int32_t>(cache_.size()); }

  bool can_allocate(int32_t n) const { return n <= n_free_; }
  // A block with reference count 1 and no cache entry; nullopt when every block is in use.
  std::optional<BlockId> allocate();
  // Drops one reference (the block must be in use); at 0 the block becomes free (see above).
  void free(BlockId id);
  // Adds a reference to a block: in use (sharing) or free with a cache entry (a cache hit).
  void acquire(BlockId id);
  int32_t ref_count(BlockId id) const { return ref_[check_id(id)]; }

  // The block caching the full block `tokens` (block_size ids) whose chain hash is `hash` and
  // whose parent's is `parent`; nullopt if none. The tokens and parent are compared too, so a
  // hash collision cannot return foreign KV.
  std::optional<BlockId> find_cached(BlockHash hash, BlockHash parent,
                                     std::span<const int32_t> tokens) const;
  // Publishes in-use block `id`, whose KV for `tokens` is written (or is written within the
  // same forward pass, before any attention reads it), under `hash`. Returns false and changes
  // nothing if another block already caches that hash or `id` already has an entry.
  bool cache(BlockId id, BlockHash hash, BlockHash parent, std::span<const int32_t> tokens);
  std::optional<BlockHash> cached_hash(BlockId id) const;
  // Drops every cache entry of a free block (e.g. after the weights changed).
  void reset_prefix_cache();

  PrefixCacheStats& stats() { return stats_; }
  const PrefixCacheStats& stats() const { return stats_; }

  // Full O(n_blocks) consistency check for tests: the free queue holds exactly the blocks with
  // reference count 0, counts agree, cache entries point back at their blocks.
  bool check_invariants() const;

 private:
  size_t check_id(BlockId id) const;
  void push_front(BlockId id);
  void push_back(BlockId id);
  void unlink(BlockId id);
  void drop_cache_entry(BlockId id);

  int32_t n_blocks_;
  int32_t block_size_;
  int32_t n_free_ = 0;
  std::vector<int32_t> ref_;          // [n_blocks]
  std::vector<BlockId> prev_, next_;  // [n_blocks] free queue links, kNoBlock at the ends
  BlockId head_ = kNoBlock, tail_ = kNoBlock;
  std::vector<uint8_t> has_hash_;     // [n_blocks]
  std::vector<BlockHash> hash_;       // [n_blocks] valid where has_hash_
  std::vector<BlockHash> parent_;     // [n_blocks] valid where has_hash_
  std::vector<int32_t> tokens_;       // [n_blocks * block_size] valid where has_hash_
  std::unordered_map<BlockHash, BlockId> cache_;
  PrefixCacheStats stats_;
};

}  // namespace ridge::kv
