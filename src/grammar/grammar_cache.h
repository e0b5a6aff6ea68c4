// Compiled grammars and their state caches, shared by the requests that use the same grammar
// text (docs/grammar.md): a request whose grammar was seen before starts with the DFA states
// and memoised masks earlier requests built, so its masks cost what a warm matcher's do.
// A bounded LRU for one vocabulary; thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/status.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/state_cache.h"
#include "grammar/token_index.h"

namespace ridge::grammar {

class GrammarCache {
 public:
  static constexpr size_t kDefaultMaxEntries = 16;
  // Past this the least recently used entries are dropped (each StateCache also bounds itself:
  // StateCache::kMaxStates, kMaxMaskBytes).
  static constexpr size_t kDefaultMaxBytes = size_t{256} << 20;

  // idx: the vocabulary the masks are for; tokens: resolves token references (its n_vocab
  // should be idx's).
  GrammarCache(std::shared_ptr<const TokenIndex> idx, TokenResolver tokens,
               size_t max_entries = kDefaultMaxEntries, size_t max_bytes = kDefaultMaxBytes);

  // The grammar compiled from (text, root): the one held, or parsed now (errors as parse_gbnf's,
  // not kept). Its entry becomes the most recently used.
  Result<std::shared_ptr<const Grammar>> get(std::string_view text, std::string_view root = "root");
  // The shared state cache of g's entry, or nullptr when g did not come from get() or has been
  // dropped since.
  std::shared_ptr<StateCache> states(const std::shared_ptr<const Grammar>& g);
  // A matcher for g: on its entry's shared state cache if held, on a cache of its own otherwise.
  Matcher matcher(const std::shared_ptr<const Grammar>& g);

  size_t size() const;
  const std::shared_ptr<const TokenIndex>& token_index() const { return idx_; }
  const TokenResolver& tokens() const { return tokens_; }

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const Grammar> grammar;
    std::shared_ptr<StateCache> states;
  };
  using List = std::list<Entry>;
  void drop(List::iterator it);
  // Drops least recently used entries (never the front) past the bounds.
  void evict();

  const std::shared_ptr<const TokenIndex> idx_;
  const TokenResolver tokens_;
  const size_t max_entries_, max_bytes_;
  mutable std::mutex mu_;
  List lru_;  // front: most recently used
  std::unordered_map<std::string, List::iterator> by_key_;
  std::unordered_map<const Grammar*, List::iterator> by_grammar_;
};

}  // namespace ridge::grammar
