#include "kv/block_manager.h"

#include <algorithm>

namespace ridge::kv {

namespace {

int32_t ceil_div(int64_t a, int32_t b) { return static_cast<int32_t>((a + b - 1) / b); }

}  // namespace

BlockManager::BlockManager(int32_t n_blocks, int32_t block_size, bool prefix_caching,
                           WindowSpace window)
    : pool_(n_blocks, block_size), prefix_caching_(prefix_caching), window_(window.window) {
  if (window.n_blocks > 0) {
    RIDGE_CHECK(window.window > 0);
    window_pool_.emplace(window.n_blocks, block_size);
  }
}

PrefixMatch BlockManager::find_cached_prefix(std::span<const int32_t> prompt) const {
  PrefixMatch match;
  match.n_query_tokens = static_cast<int32_t>(prompt.size());
  if (!prefix_caching_ || prompt.empty()) return match;
  const auto bs = static_cast<size_t>(block_size());
  const size_t n_max = (prompt.size() - 1) / bs;  // keep the last token to compute
  BlockHash parent = kRootBlockHash;
  for (size_t b = 0; b < n_max; ++b) {
    const auto tokens = prompt.subspan(b * bs, bs);
    const BlockHash hash = hash_block(parent, tokens);
    const auto id = pool_.find_cached(hash, parent, tokens);
    if (!id) break;
    match.blocks.push_back(*id);
    match.hashes.push_back(hash);
    if (window_pool_) match.window_blocks.push_back(window_pool_->find_cached(hash, parent, tokens).value_or(kNoBlock));
    parent = hash;
  }
  match.n_tokens = static_cast<int32_t>(match.blocks.size() * bs);
  shorten(match, match.blocks.size());
  return match;
}

void BlockManager::shorten(PrefixMatch& match, size_t n) const {
  const int32_t bs = block_size();
  n = std::min(n, match.blocks.size());
  if (window_pool_) {
    // The longest k <= n whose window blocks [window_first(k), k) are all cached: run[b] counts
    // the cached ones ending at b.
    std::vector<int32_t> run(n + 1, 0);
    for (size_t b = 0; b < n; ++b) run[b + 1] = match.window_blocks[b] != kNoBlock ? run[b] + 1 : 0;
    const auto first_of = [&](size_t k) {
      return static_cast<int32_t>(first_window_block(static_cast<int64_t>(k) * bs, window_, bs));
    };
    while (n > 0 && run[n] < static_cast<int32_t>(n) - first_of(n)) --n;
    match.window_blocks.resize(n);
    match.window_first = first_of(n);
  }
  match.blocks.resize(n);
  match.hashes.resize(n);
  match.n_tokens = static_cast<int32_t>(n) * bs;
}

int32_t BlockManager::n_blocks_needed(const BlockTable& table, int32_t n_new_tokens,
                                      const PrefixMatch& match) const {
  RIDGE_CHECK(n_new_tokens >= 0);
  const int64_t n_tokens = int64_t{table.n_tokens} + match.n_tokens + n_new_tokens;
  const int64_t n_have = static_cast<int64_t>(table.blocks.size() + match.blocks.size());
  return static_cast<int32_t>(std::max<int64_t>(0, ceil_div(n_tokens, block_size()) - n_have));
}

int32_t BlockManager::n_window_needed(const BlockTable& table, int32_t n_new_tokens,
                                      const PrefixMatch& match) const {
  if (!window_pool_) return 0;
  int32_t n = n_blocks_needed(table, n_new_tokens, match);
  for (size_t b = static_cast<size_t>(match.window_first); b < match.window_blocks.size(); ++b) {
    n += window_pool_->ref_count(match.window_blocks[b]) == 0 ? 1 : 0;
  }
  return n;
}

bool BlockManager::can_allocate(const BlockTable& table, int32_t n_new_tokens,
                                const PrefixMatch& match) const {
  // Hits on free cached blocks take them out of the free queue too.
  int32_t n_revived = 0;
  for (BlockId id : match.blocks) n_revived += pool_.ref_count(id) == 0 ? 1 : 0;
  if (window_pool_ && !window_pool_->can_allocate(n_window_needed(table, n_new_tokens, match))) return false;
  return pool_.can_allocate(n_blocks_needed(table, n_new_tokens, match) + n_revived);
}

Status BlockManager::allocate(BlockTable& table, int32_t n_new_tokens, const PrefixMatch& match) {
  RIDGE_CHECK(match.blocks.empty() || table.empty());
  if (!can_allocate(table, n_new_tokens, match)) {
    if (window_pool_ && !window_pool_->can_allocate(n_window_needed(table, n_new_tokens, match))) {
      return error("kv: out of window blocks: {} tokens need {}, {} free", n_new_tokens,
                   n_window_needed(table, n_new_tokens, match), window_pool_->n_free());
    }
    return error("kv: out of blocks: {} tokens need {} new blocks, {} free", n_new_tokens,
                 n_blocks_needed(table, n_new_tokens, match), pool_.n_free());
  }
  for (size_t i = 0; i < match.blocks.size(); ++i) {
    // A stale match (the pool changed since find_cached_prefix) is a scheduler bug.
    RIDGE_CHECK(pool_.cached_hash(match.blocks[i]) == match.hashes[i]);
    pool_.acquire(match.blocks[i]);
  }
  const int32_t n_fresh = n_blocks_needed(table, n_new_tokens, match);
  if (window_pool_ && !match.blocks.empty()) {
    RIDGE_CHECK(match.window_blocks.size() == match.blocks.size());
    for (size_t b = 0; b < match.window_blocks.size(); ++b) {
      const bool kept = b >= static_cast<size_t>(match.window_first);
      if (kept) window_pool_->acquire(match.window_blocks[b]);
      table.window_blocks.push_back(kept ? match.window_blocks[b] : kNoBlock);
    }
    table.n_window_released = match.window_first;
  }
  table.blocks.insert(table.blocks.end(), match.blocks.begin(), match.blocks.end());
  table.hashes.insert(table.hashes.end(), match.hashes.begin(), match.hashes.end());
  table.n_tokens += match.n_tokens;
  table.n_cached_tokens += match.n_tokens;
  if (match.n_query_tokens > 0) {
    pool_.stats().n_query_tokens += match.n_query_tokens;
    pool_.stats().n_hit_tokens += match.n_tokens;
  }
  for (int32_t i = 0; i < n_fresh; ++i) {
    const auto id = pool_.allocate();
    RIDGE_CHECK(id.has_value());  // can_allocate said so
    table.blocks.push_back(*id);
    if (window_pool_) {
      const auto wid = window_pool_->allocate();
      RIDGE_CHECK(wid.has_value());
      table.window_blocks.push_back(*wid);
    }
  }
  table.n_tokens += n_new_tokens;
  return ok_status();
}

bool BlockManager::can_allocate_sequence(std::span<const int32_t> prompt) const {
  const PrefixMatch match = find_cached_prefix(prompt);
  return can_allocate(BlockTable{}, static_cast<int32_t>(prompt.size()) - match.n_tokens, match);
}

Status BlockManager::allocate_sequence(BlockTable& table, std::span<const int32_t> prompt) {
  RIDGE_CHECK(table.empty());
  const PrefixMatch match = find_cached_prefix(prompt);
  return allocate(table, static_cast<int32_t>(prompt.size()) - match.n_tokens, match);
}

bool BlockManager::can_append(const BlockTable& table) const { return can_allocate(table, 1); }

Result<int64_t> BlockManager::append_slot(BlockTable& table) {
  RIDGE_RETURN_IF_ERROR(allocate(table, 1));
  return slot(table, table.n_tokens - 1);
}

void BlockManager::cache_computed(BlockTable& table, std::span<const int32_t> tokens,
                                  int32_t n_computed) {
  if (!prefix_caching_) return;
  RIDGE_CHECK(n_computed >= 0 && static_cast<size_t>(n_computed) <= tokens.size());
  const auto bs = static_cast<size_t>(block_size());
  const size_t n_full = static_cast<size_t>(std::min(n_computed, table.n_tokens)) / bs;
  for (size_t b = table.hashes.size(); b < n_full; ++b) {
    const BlockHash parent = b == 0 ? kRootBlockHash : table.hashes[b - 1];
    const auto block_tokens = tokens.subspan(b * bs, bs);
    const BlockHash hash = hash_block(parent, block_tokens);
    table.hashes.push_back(hash);
    // False when another block already caches the same content: this one stays private.
    (void)pool_.cache(table.blocks[b], hash, parent, block_tokens);
    if (window_pool_ && table.window_blocks[b] != kNoBlock) {
      (void)window_pool_->cache(table.window_blocks[b], hash, parent, block_tokens);
    }
  }
}

void BlockManager::truncate(BlockTable& table, int32_t n_tokens) {
  RIDGE_CHECK(n_tokens >= 0 && n_tokens <= table.n_tokens);
  const auto keep = static_cast<size_t>(ceil_div(n_tokens, block_size()));
  RIDGE_CHECK(keep >= table.hashes.size());
  while (table.blocks.size() > keep) {
    pool_.free(table.blocks.back());
    table.blocks.pop_back();
    if (window_pool_) {
      if (table.window_blocks.back() != kNoBlock) window_pool_->free(table.window_blocks.back());
      table.window_blocks.pop_back();
    }
  }
  table.n_window_released = std::min(table.n_window_released, static_cast<int32_t>(keep));
  table.n_tokens = n_tokens;
}

void BlockManager::free_sequence(BlockTable& table) {
  for (auto it = table.blocks.rbegin(); it != table.blocks.rend(); ++it) pool_.free(*it);
  for (auto it = table.window_blocks.rbegin(); it != table.window_blocks.rend(); ++it) {
    if (*it != kNoBlock) window_pool_->free(*it);
  }
  table = BlockTable{};
}

void BlockManager::release_out_of_window(BlockTable& table, int32_t next_pos) {
  if (!window_pool_) return;
  const auto upto = static_cast<int32_t>(std::min<int64_t>(first_window_block(next_pos, window_, block_size()),
                                                           static_cast<int64_t>(table.window_blocks.size())));
  for (int32_t b = table.n_window_released; b < upto; ++b) {
    BlockId& id = table.window_blocks[static_cast<size_t>(b)];
    if (id != kNoBlock) window_pool_->free(id);
    id = kNoBlock;
  }
  table.n_window_released = std::max(table.n_window_released, upto);
}

int64_t BlockManager::slot(const BlockTable& table, int32_t pos) const {
  RIDGE_CHECK(pos >= 0 && pos < table.n_tokens);
  const int32_t bs = block_size();
  return int64_t{table.blocks[static_cast<size_t>(pos / bs)]} * bs + pos % bs;
}

int64_t BlockManager::window_slot(const BlockTable& table, int32_t pos) const {
  RIDGE_CHECK(window_pool_ && pos >= 0 && pos < table.n_tokens);
  const int32_t bs = block_size();
  const BlockId id = table.window_blocks[static_cast<size_t>(pos / bs)];
  RIDGE_CHECK(id != kNoBlock);
  return int64_t{id} * bs + pos % bs;
}

}  // namespace ridge::kv
