// An immutable compiled grammar over Unicode code points, and the pushdown steps the matcher
// runs on it (docs/grammar.md). Rules are flattened into one element array: each alternative is
// a run of elements ended by kEnd. A parse position is an index into that array; a stack is the
// list of positions still to match (top = back(): always a character class after expansion,
// below it the return positions of the rules being matched). A set of stacks is the state.
// A terminal is a character class or a token reference (`<[id]>`, `<text>`, negated `!<...>`),
// which matches one whole token of the vocabulary by id.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ridge::grammar {

struct CharRange {
  uint32_t lo = 0, hi = 0;  // inclusive
};

// kToken: exactly the token `arg`; kTokenNot: any one token but `arg` (and but the
// end-of-generation tokens, which keep their own rule).
enum class ElemKind : uint8_t { kChars, kRule, kEnd, kToken, kTokenNot };
struct Element {
  ElemKind kind = ElemKind::kEnd;
  uint32_t arg = 0;  // kChars: class index; kRule: rule index; kToken/kTokenNot: token id
};
inline bool is_token_kind(ElemKind k) { return k == ElemKind::kToken || k == ElemKind::kTokenNot; }

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
  // out = the stacks of `in` whose top token element matches token `id`, moved on and
  // expanded (sorted, unique). An end-of-generation token (`eog`) matches only kToken
  // elements naming it. False on overflow, as advance().
  bool advance_token(const StackSet& in, int32_t id, bool eog, StackSet& out) const;
  // The top element of a non-empty stack: a class (kChars) or a token element.
  const Element& top(const Stack& s) const { return elems_[static_cast<size_t>(s.back())]; }
  bool top_is_token(const Stack& s) const { return is_token_kind(top(s).kind); }
  // The top class of a non-empty stack whose top is a class.
  const std::vector<CharRange>& top_class(const Stack& s) const { return classes_[top(s).arg]; }
  // Whether any element is a token reference (if not, no stack ever has one on top).
  bool has_tokens() const { return has_tokens_; }
  static bool contains(const std::vector<CharRange>& cls, uint32_t cp);
  static bool intersects(const std::vector<CharRange>& cls, uint32_t lo, uint32_t hi);

  size_t n_rules() const { return rules_.size(); }
  size_t n_elements() const { return elems_.size(); }
  const Rule& root_rule() const { return rules_[root_]; }

 private:
  // Expands `s` until every resulting stack has a character class on top (or is empty, which
  // means the sentence is complete) and appends them to out.
  bool expand(Stack s, StackSet& out) const;
  // Expands `s` with its top element matched (appended to out); false on overflow.
  bool step_over_top(const Stack& s, StackSet& out) const;
  static void sort_unique(StackSet& set);

  std::vector<Element> elems_;
  std::vector<std::vector<CharRange>> classes_;
  std::vector<Rule> rules_;
  uint32_t root_ = 0;
  StackSet initial_;
  bool initial_ok_ = false;
  bool has_tokens_ = false;
};

// Resolves the token references of a grammar against a vocabulary: `<text>` (llama.cpp's form,
// the brackets are part of the text, e.g. `<|end|>`) and `<"text">` (any token text, as a string
// literal, e.g. `<"[TOOL_CALLS]">`) by `find`, `<[id]>` by the range check.
struct TokenResolver {
  int32_t n_vocab = 0;
  // The id of the one token whose text is exactly `text`, or nullopt.
  std::function<std::optional<int32_t>(std::string_view text)> find;
};

// GBNF as llama.cpp defines it, token references included (docs/grammar.md). Errors are usage
// errors of the form "grammar: line L col C: ...". Without `tokens`, only `<[id]>` references
// are accepted (unchecked: an id outside the vocabulary never matches).
Result<std::shared_ptr<const Grammar>> parse_gbnf(std::string_view source,
                                                  std::string_view root = "root",
                                                  const TokenResolver* tokens = nullptr);

// A GBNF string literal matching exactly `utf8` (valid UTF-8), for building grammars in text.
std::string gbnf_literal(std::string_view utf8);

}  // namespace ridge::grammar
