// A lazily built DFA over the pushdown states of one grammar, and the token masks of those
// states (docs/grammar.md). Shared by a Matcher and its copies; every call takes the mutex.
#pragma once

#include <array>
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
  };

  int32_t intern(const std::shared_ptr<const StackSet>& stacks);
  int32_t next(int32_t s, uint32_t cp);
  int32_t compute(int32_t s, uint32_t cp);
  // The span of state s holding cp, or -1.
  int32_t span_of(int32_t s, uint32_t cp) const;
  void walk(int32_t s, Utf8Partial p, std::vector<uint64_t>& bits);
  void trim();

  std::mutex mu_;
  std::shared_ptr<const Grammar> g_;
  std::shared_ptr<const TokenIndex> idx_;
  std::vector<State> states_;
  std::unordered_map<std::string, int32_t> index_;
  std::vector<std::vector<uint64_t>> masks_;
  StackSet scratch_;
};

}  // namespace ridge::grammar
