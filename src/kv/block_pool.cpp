#include "kv/block_pool.h"

#include <algorithm>

#include "base/checked_math.h"

namespace ridge::kv {

Result<BlockPool> BlockPool::create(int32_t n_blocks, int32_t block_size) {
  if (n_blocks <= 0) return usage_error("kv: block count {} is not positive", n_blocks);
  if (block_size <= 0) return usage_error("kv: block size {} is not positive", block_size);
  return BlockPool(n_blocks, block_size);
}

BlockPool::BlockPool(int32_t n_blocks, int32_t block_size)
    : n_blocks_(n_blocks), block_size_(block_size) {
  RIDGE_CHECK(n_blocks > 0 && block_size > 0);
  const auto n = static_cast<size_t>(n_blocks);
  const auto n_slots = checked_mul(static_cast<uint64_t>(n_blocks), block_size);
  RIDGE_CHECK(n_slots.has_value());  // < 2^62: two positive int32
  ref_.assign(n, 0);
  prev_.assign(n, kNoBlock);
  next_.assign(n, kNoBlock);
  has_hash_.assign(n, 0);
  hash_.assign(n, 0);
  parent_.assign(n, 0);
  tokens_.assign(static_cast<size_t>(*n_slots), 0);
  // Initially every block is free and empty, handed out in id order.
  for (BlockId id = 0; id < n_blocks; ++id) push_back(id);
}

size_t BlockPool::check_id(BlockId id) const {
  RIDGE_CHECK(id >= 0 && id < n_blocks_);
  return static_cast<size_t>(id);
}

void BlockPool::push_front(BlockId id) {
  const size_t i = check_id(id);
  prev_[i] = kNoBlock;
  next_[i] = head_;
  if (head_ != kNoBlock) prev_[static_cast<size_t>(head_)] = id;
  head_ = id;
  if (tail_ == kNoBlock) tail_ = id;
  ++n_free_;
}

void BlockPool::push_back(BlockId id) {
  const size_t i = check_id(id);
  next_[i] = kNoBlock;
  prev_[i] = tail_;
  if (tail_ != kNoBlock) next_[static_cast<size_t>(tail_)] = id;
  tail_ = id;
  if (head_ == kNoBlock) head_ = id;
  ++n_free_;
}

void BlockPool::unlink(BlockId id) {
  const size_t i = check_id(id);
  if (prev_[i] != kNoBlock) {
    next_[static_cast<size_t>(prev_[i])] = next_[i];
  } else {
    head_ = next_[i];
  }
  if (next_[i] != kNoBlock) {
    prev_[static_cast<size_t>(next_[i])] = prev_[i];
  } else {
    tail_ = prev_[i];
  }
  prev_[i] = next_[i] = kNoBlock;
  --n_free_;
}

void BlockPool::drop_cache_entry(BlockId id) {
  const size_t i = check_id(id);
  if (!has_hash_[i]) return;
  auto it = cache_.find(hash_[i]);
  RIDGE_CHECK(it != cache_.end() && it->second == id);
  cache_.erase(it);
  has_hash_[i] = 0;
}

std::optional<BlockId> BlockPool::allocate() {
  if (head_ == kNoBlock) return std::nullopt;
  const BlockId id = head_;
  unlink(id);
  const size_t i = static_cast<size_t>(id);
  if (has_hash_[i]) {
    drop_cache_entry(id);
    ++stats_.n_evictions;
  }
  ref_[i] = 1;
  return id;
}

void BlockPool::free(BlockId id) {
  const size_t i = check_id(id);
  RIDGE_CHECK(ref_[i] > 0);
  if (--ref_[i] > 0) return;
  if (has_hash_[i]) {
    push_back(id);  // most recently used: evicted last
  } else {
    push_front(id);  // holds nothing worth keeping: reused first
  }
}

void BlockPool::acquire(BlockId id) {
  const size_t i = check_id(id);
  if (ref_[i] == 0) {
    RIDGE_CHECK(has_hash_[i]);  // a free block without content must come from allocate()
    unlink(id);
  }
  ++ref_[i];
}

std::optional<BlockId> BlockPool::find_cached(BlockHash hash, BlockHash parent,
                                              std::span<const int32_t> tokens) const {
  RIDGE_CHECK(tokens.size() == static_cast<size_t>(block_size_));
  auto it = cache_.find(hash);
  if (it == cache_.end()) return std::nullopt;
  const auto i = static_cast<size_t>(it->second);
  if (parent_[i] != parent) return std::nullopt;
  const auto stored = std::span(tokens_).subspan(i * static_cast<size_t>(block_size_),
                                                 static_cast<size_t>(block_size_));
  if (!std::equal(stored.begin(), stored.end(), tokens.begin())) return std::nullopt;
  return it->second;
}

bool BlockPool::cache(BlockId id, BlockHash hash, BlockHash parent,
                      std::span<const int32_t> tokens) {
  const size_t i = check_id(id);
  RIDGE_CHECK(ref_[i] > 0);
  RIDGE_CHECK(tokens.size() == static_cast<size_t>(block_size_));
  if (has_hash_[i] || cache_.count(hash) != 0) return false;
  cache_.emplace(hash, id);
  has_hash_[i] = 1;
  hash_[i] = hash;
  parent_[i] = parent;
  std::copy(tokens.begin(), tokens.end(),
            tokens_.begin() + static_cast<ptrdiff_t>(i * static_cast<size_t>(block_size_)));
  return true;
}

std::optional<BlockHash> BlockPool::cached_hash(BlockId id) const {
  const size_t i = check_id(id);
  if (!has_hash_[i]) return std::nullopt;
  return hash_[i];
}

void BlockPool::reset_prefix_cache() {
  for (BlockId id = head_; id != kNoBlock; id = next_[static_cast<size_t>(id)]) {
    drop_cache_entry(id);
  }
}

bool BlockPool::check_invariants() const {
  std::vector<uint8_t> in_queue(static_cast<size_t>(n_blocks_), 0);
  int32_t n_queued = 0;
  BlockId prev = kNoBlock;
  for (BlockId id = head_; id != kNoBlock; id = next_[static_cast<size_t>(id)]) {
    if (id < 0 || id >= n_blocks_ || in_queue[static_cast<size_t>(id)]) return false;  // cycle
    if (prev_[static_cast<size_t>(id)] != prev) return false;
    in_queue[static_cast<size_t>(id)] = 1;
    ++n_queued;
    prev = id;
  }
  if (prev != tail_ || n_queued != n_free_) return false;
  size_t n_hashed = 0;
  for (size_t i = 0; i < in_queue.size(); ++i) {
    if (ref_[i] < 0 || (ref_[i] == 0) != (in_queue[i] != 0)) return false;
    if (has_hash_[i]) {
      ++n_hashed;
      auto it = cache_.find(hash_[i]);
      if (it == cache_.end() || it->second != static_cast<BlockId>(i)) return false;
    }
  }
  return n_hashed == cache_.size();
}

}  // namespace ridge::kv
