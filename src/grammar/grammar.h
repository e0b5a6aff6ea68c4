// An immutable compiled grammar over Unicode code points, and the pushdown steps the matcher
// runs on it (docs/grammar.md). Rules are flattened into one element array: each alternative is
// a run of elements ended by kEnd. A parse position is an index into that array; a stack is the
// list of positions still to match (top = back(): always a character class after expansion,
// below it the return positions of the rules being matched). A set of stacks is the state.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ridge::grammar {

struct CharRange {
  uint32_t lo = 0, hi = 0;  // inclusive
};

enum class ElemKind : uint8_t { kChars, kRule, kEnd };
struct Element {
  ElemKind kind = ElemKind::kEnd;
  uint32_t arg = 0;  // kChars: class index; kRule: rule index
};

using Stack = std::vector<int32_t>;
using StackSet = std::vector<Stack>;  // sorted, without duplicates

struct Rule {
  std::string name;
  std::vector<int32_t> alts;  // start position of each alternative
};

class Grammar {
 public:
  // Bounds on the pushdown state: more stacks or deeper stacks than this is an error.
  static constexpr size_t kMaxStacks = 1024;
  static constexpr size_t kMaxDepth = 2048;

  // Takes a flattened, checked grammar (see gbnf_parser.cpp). Use parse_gbnf().
  Grammar(std::vector<Element> elems, std::vector<std::vector<CharRange>> classes,
          std::vector<Rule> rules, uint32_t root);

  // The start state: the root rule's alternatives expanded. Empty if expansion overflowed.
  const StackSet& initial() const { return initial_; }
  bool initial_ok() const { return initial_ok_; }
  // out = the stacks of `in` advanced over code point cp and expanded (sorted, unique).
  // Returns false when the state grows past kMaxStacks / kMaxDepth (out is then unusable).
  bool advance(const StackSet& in, uint32_t cp, StackSet& out) const;
  // The top class of a non-empty stack.
  const std::vector<CharRange>& top_class(const Stack& s) const {
    return classes_[elems_[static_cast<size_t>(s.back())].arg];
  }
  static bool contains(const std::vector<CharRange>& cls, uint32_t cp);
  static bool intersects(const std::vector<CharRange>& cls, uint32_t lo, uint32_t hi);

  size_t n_rules() const { return rules_.size(); }
  size_t n_elements() const { return elems_.size(); }
  const Rule& root_rule() const { return rules_[root_]; }

 private:
  // Expands `s` until every resulting stack has a character class on top (or is empty, which
  // means the sentence is complete) and appends them to out.
  bool expand(Stack s, StackSet& out) const;

  std::vector<Element> elems_;
  std::vector<std::vector<CharRange>> classes_;
  std::vector<Rule> rules_;
  uint32_t root_ = 0;
  StackSet initial_;
  bool initial_ok_ = false;
};

// GBNF as llama.cpp defines it (docs/grammar.md). Errors are usage errors of the form
// "grammar: line L col C: ...".
Result<std::shared_ptr<const Grammar>> parse_gbnf(std::string_view source,
                                                  std::string_view root = "root");

}  // namespace ridge::grammar
