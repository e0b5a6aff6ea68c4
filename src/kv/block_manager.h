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
#pragma once

#include <cstdint>
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
  bool empty() const { return blocks.empty(); }
};

// The longest cached prefix of a prompt, in whole blocks.
struct PrefixMatch {
  std::vector<BlockId> blocks;
  std::vector<BlockHash> hashes;
  int32_t n_tokens = 0;        // blocks.size() * block_size
  int32_t n_query_tokens = 0;  // prompt length looked up (for the hit-rate statistics)
};

class BlockManager {
 public:
  // Contract: n_blocks > 0, block_size > 0 (checked).
  BlockManager(int32_t n_blocks, int32_t block_size, bool prefix_caching = true);

  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }
  int32_t block_size() const { return pool_.block_size(); }
  bool prefix_caching() const { return prefix_caching_; }

  // Cached full blocks at the start of `prompt`. At least the last prompt token is left out,
  // because its logits must be computed. Changes nothing; use it before any other change to
  // the pool (the match holds no references until allocate()).
  PrefixMatch find_cached_prefix(std::span<const int32_t> prompt) const;

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

  // KV slot of position pos: block_id * block_size + pos % block_size. pos < n_tokens.
  int64_t slot(const BlockTable& table, int32_t pos) const;

 private:
  BlockPool pool_;
  bool prefix_caching_;
};

}  // namespace ridge::kv
