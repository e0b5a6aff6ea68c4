// BlockManager: per-sequence block tables on top of the BlockPool, with automatic prefix caching
// (vLLM v1 / nano-vllm style). It hands out token slots; it never touches a tensor.
//
// Life of a sequence, as the scheduler drives it:
//   match = find_cached_prefix(prompt)              // full blocks already cached, changes nothing
//   if (can_allocate(table, n, match)) allocate(table, n, match)   // adopt the hits, reserve n
//   ... forward writes KV of the new tokens into slot(table, pos) ...
//   cache_computed(table, tokens, n_computed)       // publish blocks that are now full and written
//   each decode step: if (can_append(table)) append_slot(table) else preempt someone
//   free_sequence(table)                            // finished, aborted or preempted
// Whole-prompt shorthand: can_allocate_sequence(prompt) / allocate_sequence(table, prompt).
//
// With a window space (kv_cache.h: the sliding-window layers' K/V in blocks of their own), every
// table also holds a window block per block, from a second pool. release_out_of_window() gives
// back the window blocks no later position reads (wholly before its window); a cached prefix is
// adopted only up to where the window blocks its next position reads are still cached.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"
#include "kv/block_pool.h"

namespace ridge::kv {

// The KV blocks of one sequence, owned by the sequence and mutated only through BlockManager.
// Invariant: blocks.size() == ceil(n_tokens / block_size).
struct BlockTable {
  std::vector<BlockId> blocks;
  std::vector<BlockHash> hashes;  // chain hashes of the leading full blocks published so far
  int32_t n_tokens = 0;           // slots reserved: positions [0, n_tokens)
  int32_t n_cached_tokens = 0;    // leading positions whose KV came from the prefix cache
  // With a window space: one window block per block, kNoBlock for the leading
  // n_window_released ones (given back: out of every window).
  std::vector<BlockId> window_blocks;
  int32_t n_window_released = 0;
  bool empty() const { return blocks.empty(); }
};

// The longest cached prefix of a prompt, in whole blocks.
struct PrefixMatch {
  std::vector<BlockId> blocks;
  std::vector<BlockHash> hashes;
  int32_t n_tokens = 0;        // blocks.size() * block_size
  int32_t n_query_tokens = 0;  // prompt length looked up (for the hit-rate statistics)
  // With a window space: per block, the window pool's cached block for it or kNoBlock; those
  // from window_first on (the window of position n_tokens) are all cached.
  std::vector<BlockId> window_blocks;
  int32_t window_first = 0;
};

// A window space: its block count and the positions a windowed layer attends to (its own and
// the window - 1 before it).
struct WindowSpace {
  int32_t n_blocks = 0;
  int32_t window = 0;
};

class BlockManager {
 public:
  // Contract: n_blocks > 0, block_size > 0, and for a window space n_blocks and window > 0
  // (checked). window.n_blocks 0: no window space.
  BlockManager(int32_t n_blocks, int32_t block_size, bool prefix_caching = true,
               WindowSpace window = {});

  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }
  const BlockPool* window_pool() const { return window_pool_ ? &*window_pool_ : nullptr; }
  int32_t window() const { return window_; }
  int32_t block_size() const { return pool_.block_size(); }
  bool prefix_caching() const { return prefix_caching_; }

  // Cached full blocks at the start of `prompt`. At least the last prompt token is left out,
  // because its logits must be computed. Changes nothing; use it before any other change to
  // the pool (the match holds no references until allocate()).
  PrefixMatch find_cached_prefix(std::span<const int32_t> prompt) const;
  // Cuts a match to at most n blocks (and, with a window space, further back to where the
  // window blocks its next position reads are cached).
  void shorten(PrefixMatch& match, size_t n) const;

  // Fresh blocks allocate(table, n_new_tokens, match) takes from the pool.
  int32_t n_blocks_needed(const BlockTable& table, int32_t n_new_tokens,
                          const PrefixMatch& match = {}) const;
  bool can_allocate(const BlockTable& table, int32_t n_new_tokens,
                    const PrefixMatch& match = {}) const;
  // Adopts `match` (only into an empty table) and reserves n_new_tokens more slots. When the
  // pool is short, returns an error and changes nothing.
  Status allocate(BlockTable& table, int32_t n_new_tokens, const PrefixMatch& match = {});

  // The whole prompt at once: match its cached prefix and reserve the rest.
  bool can_allocate_sequence(std::span<const int32_t> prompt) const;
  Status allocate_sequence(BlockTable& table, std::span<const int32_t> prompt);

  // One more slot at position table.n_tokens (a decode step).
  bool can_append(const BlockTable& table) const;
  // The new token's slot, or an error (pool exhausted; nothing changed).
  Result<int64_t> append_slot(BlockTable& table);

  // Publishes the full blocks among the first n_computed positions (whose KV is written, or is
  // written in this step's forward before attention reads it) so later prompts can reuse them.
  // tokens: the sequence's tokens, at least n_computed of them. No-op without prefix caching.
  void cache_computed(BlockTable& table, std::span<const int32_t> tokens, int32_t n_computed);

  // Gives back the slots at positions n_tokens and later (speculative decoding's rejected drafts):
  // the blocks past ceil(n_tokens / block_size) return to the pool. Published blocks stay
  // (n_tokens must not cut into them).
  void truncate(BlockTable& table, int32_t n_tokens);

  // Releases every block (last block first, so a shared prefix is evicted last); empties table.
  void free_sequence(BlockTable& table);

  // With a window space: the sequence computes from position next_pos on, so window blocks
  // wholly before next_pos - window + 1 are read no more and go back to the window pool (cached
  // ones stay cached until evicted). No-op without one.
  void release_out_of_window(BlockTable& table, int32_t next_pos);

  // KV slot of position pos: block_id * block_size + pos % block_size. pos < n_tokens.
  int64_t slot(const BlockTable& table, int32_t pos) const;
  // The same in the window space (the block must not be released).
  int64_t window_slot(const BlockTable& table, int32_t pos) const;

 private:
  // The window pool's fresh and revived blocks allocate() would take (0 without a window space).
  int32_t n_window_needed(const BlockTable& table, int32_t n_new_tokens, const PrefixMatch& match) const;

  BlockPool pool_;
  bool prefix_caching_;
  std::optional<BlockPool> window_pool_;
  int32_t window_ = 0;
};

}  // namespace ridge::kv
