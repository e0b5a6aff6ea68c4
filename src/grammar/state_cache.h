// A lazily built DFA over the pushdown states of one grammar, and the token masks of those
// states (docs/grammar.md). Shared by a Matcher and its copies, and by all the matchers of one
// GrammarCache entry (requests with the same grammar text); every call takes the mutex.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/token_index.h"
#include "grammar/utf8.h"

namespace ridge::grammar {

class StateCache {
 public:
  // Past these the cache is emptied (between masks) and rebuilt as needed.
  static constexpr size_t kMaxStates = 1 << 15;
  static constexpr size_t kMaxMaskBytes = size_t{64} << 20;

  StateCache(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenIndex> idx);

  // allowed[t] = 1 iff token t may follow the state (stacks, partial); eog per `complete`.
  void fill_mask(const std::shared_ptr<const StackSet>& stacks, const Utf8Partial& partial,
                 std::vector<uint8_t>& allowed);

  const std::shared_ptr<const Grammar>& grammar() const { return g_; }
  const std::shared_ptr<const TokenIndex>& token_index() const { return idx_; }

  struct Stats {
    size_t states = 0;     // DFA states held
    size_t masks = 0;      // memoised masks held
    uint64_t mask_hits = 0;  // fill_mask calls served by a memoised mask
    uint64_t mask_walks = 0; // fill_mask calls that walked the vocabulary
  };
  Stats stats();
  // An estimate of the memory held (states, spans, masks), without taking the mutex.
  size_t memory_bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  static constexpr int32_t kUnknown = -2, kDead = -1;
  struct State {
    std::shared_ptr<const StackSet> stacks;
    std::vector<CharRange> first;  // union of the top classes: what the next character may be
    bool complete = false;
    std::array<int32_t, 128> ascii;
    // The code points of `first` cut where any top class starts or ends: the next state is the
    // same for every code point of a span (it depends only on which stacks' classes match).
    struct Span {
      uint32_t lo, hi;
      int32_t next;
    };
    std::vector<Span> spans;
    int32_t mask = -1;  // index into masks_
    // Token elements on top of some stack: these ids are allowed (between characters); with
    // a negated one (`any_not`), every token but the EOG tokens and `not_excluded` (the id
    // every negated element excludes, -1 if they differ) is.
    std::vector<int32_t> tokens;
    bool any_not = false;
    int32_t not_excluded = -1;
  };

  int32_t intern(const std::shared_ptr<const StackSet>& stacks);
  int32_t next(int32_t s, uint32_t cp);
  int32_t compute(int32_t s, uint32_t cp);
  // The span of state s holding cp, or -1.
  int32_t span_of(int32_t s, uint32_t cp) const;
  void walk(int32_t s, Utf8Partial p, std::vector<uint64_t>& bits);
  // The token elements' part of the mask of state s (between characters).
  void token_bits(const State& st, std::vector<uint64_t>& bits) const;
  void trim();

  std::mutex mu_;
  std::shared_ptr<const Grammar> g_;
  std::shared_ptr<const TokenIndex> idx_;
  std::vector<State> states_;
  std::unordered_map<std::string, int32_t> index_;
  std::vector<std::vector<uint64_t>> masks_;
  StackSet scratch_;
  uint64_t mask_hits_ = 0, mask_walks_ = 0;
  size_t state_bytes_ = 0;  // estimate for the states (masks are counted from masks_)
  std::atomic<size_t> bytes_{0};
};

}  // namespace ridge::grammar
