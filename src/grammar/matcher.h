// Per-sequence grammar state: which tokens may come next, and advancing over one token.
// Copying is O(1) (shared immutable state + the shared StateCache), for rollback and
// speculative decoding.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "grammar/grammar.h"
#include "grammar/token_index.h"
#include "grammar/utf8.h"

namespace ridge::grammar {

class StateCache;

class Matcher {
 public:
  // With a state cache of its own (shared only by its copies).
  Matcher(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenIndex> idx);
  // With a state cache shared with other matchers of the same grammar and vocabulary
  // (GrammarCache): masks of states any of them has seen are memoised.
  explicit Matcher(std::shared_ptr<StateCache> cache);

  // allowed.size() == n_vocab on return; allowed[t] != 0 iff t may come next.
  void fill_mask(std::vector<uint8_t>& allowed) const;
  // Usage error if the token is not allowed (the state is then unchanged).
  Status accept_token(int32_t id);
  // Advances over raw bytes (the same check as accept_token, without a token).
  Status accept_bytes(std::string_view bytes);
  bool is_complete() const;   // the text so far is a complete sentence of the grammar
  bool can_continue() const;  // some non-empty continuation exists
  bool finished() const { return finished_; }  // an end-of-generation token was accepted

 private:
  // Advances cur/p over bytes as text; the state is left undefined on error.
  Status advance_text(std::string_view bytes, StackSet& cur, Utf8Partial& p) const;

  std::shared_ptr<const Grammar> g_;
  std::shared_ptr<const TokenIndex> idx_;
  std::shared_ptr<StateCache> cache_;
  std::shared_ptr<const StackSet> stacks_;
  Utf8Partial partial_;
  bool finished_ = false;
};

}  // namespace ridge::grammar
