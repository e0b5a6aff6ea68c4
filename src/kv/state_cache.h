// StateCache: the prefix cache's recurrent states (hybrid models, docs/hybrid.md). A cached
// prefix can be reused only where some run left the linear layers' state: the state after a
// prefix of whole blocks is kept in a slot of the runner's state store, under the chain hash of
// the prefix's last block (kv/block_hash.h). It never touches a tensor: it hands out and names
// slots [first_slot, first_slot + n_slots).
//
// A slot is free, taken (a snapshot the next step writes: not found, not evicted), or cached
// (found by its key; the least recently used one is evicted when a slot is needed). As in the
// BlockPool, a lookup compares the parent hash and the block's tokens too, so a hash collision
// cannot return a foreign state.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kv/block_hash.h"

namespace ridge::kv {

// The prefix a state ends: its last full block's chain hash, that block's parent hash and tokens.
struct StateKey {
  BlockHash hash = 0;
  BlockHash parent = 0;
  std::span<const int32_t> tokens;  // block_size ids
};

struct StateCacheStats {
  int64_t n_taken = 0;      // snapshots written
  int64_t n_hits = 0;       // states found for a prompt
  int64_t n_evictions = 0;  // cached states dropped to make room
};

class StateCache {
 public:
  StateCache() = default;  // no slots: nothing is cached, every lookup misses
  // Contract: n_slots >= 0, block_size > 0 (checked).
  StateCache(int32_t first_slot, int32_t n_slots, int32_t block_size);

  int32_t n_slots() const { return static_cast<int32_t>(entries_.size()); }
  int32_t n_cached() const;

  // The slot caching the state after the prefix `key` ends; marks it recently used.
  std::optional<int32_t> find(const StateKey& key);
  // Whether find(key) would succeed, changing nothing.
  bool contains(const StateKey& key) const;
  // A slot for a snapshot of the prefix `key` ends: a free slot, else the least recently used
  // cached one (evicted). nullopt when every slot is taken, or the key is cached already.
  std::optional<int32_t> take(const StateKey& key);
  // The snapshot in a taken slot is written: it is found from now on.
  void publish(int32_t slot);
  // Frees a cached slot that still holds the state under `hash` (a superseded snapshot; one since
  // evicted and taken again is left alone).
  void release(int32_t slot, BlockHash hash);
  // Frees a taken slot whose snapshot was not written (the step failed).
  void abandon(int32_t slot);

  StateCacheStats& stats() { return stats_; }
  const StateCacheStats& stats() const { return stats_; }

 private:
  enum class SlotState : uint8_t { kFree, kTaken, kCached };
  struct Entry {
    SlotState state = SlotState::kFree;
    BlockHash hash = 0, parent = 0;
    uint64_t last_used = 0;
  };
  std::optional<size_t> index_of(const StateKey& key, bool cached_only) const;
  std::span<const int32_t> tokens_of(size_t i) const;

  int32_t first_slot_ = 0;
  int32_t block_size_ = 1;
  std::vector<Entry> entries_;
  std::vector<int32_t> tokens_;  // [n_slots * block_size] the key's block, where not free
  uint64_t clock_ = 0;
  StateCacheStats stats_;
};

}  // namespace ridge::kv
