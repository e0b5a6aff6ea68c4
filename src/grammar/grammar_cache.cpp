#include "grammar/grammar_cache.h"

#include <utility>

namespace ridge::grammar {

GrammarCache::GrammarCache(std::shared_ptr<const TokenIndex> idx, TokenResolver tokens,
                           size_t max_entries, size_t max_bytes)
    : idx_(std::move(idx)),
      tokens_(std::move(tokens)),
      max_entries_(max_entries < 1 ? 1 : max_entries),
      max_bytes_(max_bytes) {}

Result<std::shared_ptr<const Grammar>> GrammarCache::get(std::string_view text,
                                                         std::string_view root) {
  std::string key(root);
  key += '\0';
  key += text;
  {
    std::lock_guard lock(mu_);
    if (auto it = by_key_.find(key); it != by_key_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->grammar;
    }
  }
  // Parsed outside the lock; a grammar parsed twice concurrently keeps the first entry.
  RIDGE_ASSIGN_OR_RETURN(std::shared_ptr<const Grammar> g, parse_gbnf(text, root, &tokens_));
  std::lock_guard lock(mu_);
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->grammar;
  }
  auto states = std::make_shared<StateCache>(g, idx_);
  lru_.push_front(Entry{key, g, std::move(states)});
  by_key_.emplace(std::move(key), lru_.begin());
  by_grammar_.emplace(g.get(), lru_.begin());
  evict();
  return g;
}

std::shared_ptr<StateCache> GrammarCache::states(const std::shared_ptr<const Grammar>& g) {
  std::lock_guard lock(mu_);
  auto it = by_grammar_.find(g.get());
  if (it == by_grammar_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  evict();  // the state caches grow between calls: the bound is checked here too
  return lru_.front().states;
}

Matcher GrammarCache::matcher(const std::shared_ptr<const Grammar>& g) {
  if (std::shared_ptr<StateCache> s = states(g)) return Matcher(std::move(s));
  return Matcher(g, idx_);
}

size_t GrammarCache::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

void GrammarCache::drop(List::iterator it) {
  by_key_.erase(it->key);
  by_grammar_.erase(it->grammar.get());
  lru_.erase(it);
}

void GrammarCache::evict() {
  while (lru_.size() > max_entries_) drop(std::prev(lru_.end()));
  size_t bytes = 0;
  for (const Entry& e : lru_) bytes += e.states->memory_bytes();
  while (bytes > max_bytes_ && lru_.size() > 1) {
    auto last = std::prev(lru_.end());
    bytes -= last->states->memory_bytes();
    drop(last);
  }
}

}  // namespace ridge::grammar
