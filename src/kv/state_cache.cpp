#include "kv/state_cache.h"

#include <algorithm>

#include "base/check.h"

namespace ridge::kv {

StateCache::StateCache(int32_t first_slot, int32_t n_slots, int32_t block_size)
    : first_slot_(first_slot), block_size_(block_size) {
  RIDGE_CHECK(first_slot >= 0 && n_slots >= 0 && block_size > 0);
  entries_.resize(static_cast<size_t>(n_slots));
  tokens_.resize(static_cast<size_t>(n_slots) * static_cast<size_t>(block_size));
}

int32_t StateCache::n_cached() const {
  return static_cast<int32_t>(std::count_if(entries_.begin(), entries_.end(),
                                            [](const Entry& e) { return e.state == SlotState::kCached; }));
}

std::span<const int32_t> StateCache::tokens_of(size_t i) const {
  return std::span(tokens_).subspan(i * static_cast<size_t>(block_size_), static_cast<size_t>(block_size_));
}

std::optional<size_t> StateCache::index_of(const StateKey& key, bool cached_only) const {
  if (key.tokens.size() != static_cast<size_t>(block_size_)) return std::nullopt;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.state == SlotState::kFree || (cached_only && e.state != SlotState::kCached)) continue;
    if (e.hash == key.hash && e.parent == key.parent && std::ranges::equal(tokens_of(i), key.tokens)) return i;
  }
  return std::nullopt;
}

bool StateCache::contains(const StateKey& key) const { return index_of(key, true).has_value(); }

std::optional<int32_t> StateCache::find(const StateKey& key) {
  const auto i = index_of(key, true);
  if (!i) return std::nullopt;
  entries_[*i].last_used = ++clock_;
  stats_.n_hits += 1;
  return first_slot_ + static_cast<int32_t>(*i);
}

std::optional<int32_t> StateCache::take(const StateKey& key) {
  if (key.tokens.size() != static_cast<size_t>(block_size_) || index_of(key, false)) return std::nullopt;
  std::optional<size_t> pick;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.state == SlotState::kFree) {
      pick = i;
      break;
    }
    if (e.state == SlotState::kCached && (!pick || e.last_used < entries_[*pick].last_used)) pick = i;
  }
  if (!pick) return std::nullopt;
  Entry& e = entries_[*pick];
  if (e.state == SlotState::kCached) stats_.n_evictions += 1;
  e = Entry{SlotState::kTaken, key.hash, key.parent, ++clock_};
  std::ranges::copy(key.tokens, tokens_.begin() + static_cast<std::ptrdiff_t>(*pick * static_cast<size_t>(block_size_)));
  stats_.n_taken += 1;
  return first_slot_ + static_cast<int32_t>(*pick);
}

void StateCache::publish(int32_t slot) {
  Entry& e = entries_.at(static_cast<size_t>(slot - first_slot_));
  RIDGE_CHECK(e.state == SlotState::kTaken);
  e.state = SlotState::kCached;
  e.last_used = ++clock_;
}

void StateCache::release(int32_t slot, BlockHash hash) {
  Entry& e = entries_.at(static_cast<size_t>(slot - first_slot_));
  if (e.state != SlotState::kCached || e.hash != hash) return;
  e = Entry{};
}

void StateCache::abandon(int32_t slot) {
  Entry& e = entries_.at(static_cast<size_t>(slot - first_slot_));
  RIDGE_CHECK(e.state == SlotState::kTaken);
  e = Entry{};
}

}  // namespace ridge::kv
