// Pushdown steps over the flattened grammar: expansion to terminal tops (character classes and
// token elements) and advancing over one code point or one token.
#include "grammar/grammar.h"

#include <algorithm>
#include <utility>

namespace ridge::grammar {

Grammar::Grammar(std::vector<Element> elems, std::vector<std::vector<CharRange>> classes,
                 std::vector<Rule> rules, uint32_t root)
    : elems_(std::move(elems)),
      classes_(std::move(classes)),
      rules_(std::move(rules)),
      root_(root) {
  for (const Element& e : elems_) has_tokens_ = has_tokens_ || is_token_kind(e.kind);
  initial_ok_ = true;
  for (int32_t alt : rules_[root_].alts) {
    if (!expand(Stack{alt}, initial_)) {
      initial_ok_ = false;
      break;
    }
  }
  sort_unique(initial_);
  if (!initial_ok_) initial_.clear();
}

bool Grammar::contains(const std::vector<CharRange>& cls, uint32_t cp) {
  // Ranges are sorted and disjoint: binary search for the last range with lo <= cp.
  auto it = std::upper_bound(cls.begin(), cls.end(), cp,
                             [](uint32_t v, const CharRange& r) { return v < r.lo; });
  return it != cls.begin() && cp <= std::prev(it)->hi;
}

bool Grammar::intersects(const std::vector<CharRange>& cls, uint32_t lo, uint32_t hi) {
  auto it = std::upper_bound(cls.begin(), cls.end(), hi,
                             [](uint32_t v, const CharRange& r) { return v < r.lo; });
  return it != cls.begin() && std::prev(it)->hi >= lo;
}

bool Grammar::expand(Stack s, StackSet& out) const {
  // Without left recursion (rejected by the parser) this terminates; the work bound guards
  // against grammars whose expansion is merely huge.
  std::vector<Stack> todo;
  todo.push_back(std::move(s));
  size_t work = 0;
  while (!todo.empty()) {
    Stack cur = std::move(todo.back());
    todo.pop_back();
    if (++work > 64 * kMaxStacks) return false;
    for (;;) {
      if (cur.empty()) {
        out.push_back(std::move(cur));  // the sentence may end here
        break;
      }
      const Element& e = elems_[static_cast<size_t>(cur.back())];
      if (e.kind == ElemKind::kChars || is_token_kind(e.kind)) {
        out.push_back(std::move(cur));
        break;
      }
      if (e.kind == ElemKind::kEnd) {
        cur.pop_back();  // back to the return position of the caller
        continue;
      }
      // A rule reference: continue after it on return, unless it is the last element of its
      // alternative (tail call: nothing left to return to, keeps repetition stacks flat).
      const int32_t ret = cur.back() + 1;
      if (elems_[static_cast<size_t>(ret)].kind == ElemKind::kEnd) {
        cur.pop_back();
      } else {
        cur.back() = ret;
      }
      if (cur.size() + 1 > kMaxDepth) return false;
      const Rule& r = rules_[e.arg];
      for (size_t i = 1; i < r.alts.size(); ++i) {
        Stack alt = cur;
        alt.push_back(r.alts[i]);
        todo.push_back(std::move(alt));
      }
      cur.push_back(r.alts[0]);
    }
    if (out.size() > kMaxStacks) return false;
  }
  return true;
}

bool Grammar::step_over_top(const Stack& s, StackSet& out) const {
  Stack next = s;
  next.back() += 1;
  return expand(std::move(next), out);
}

void Grammar::sort_unique(StackSet& set) {
  std::sort(set.begin(), set.end());
  set.erase(std::unique(set.begin(), set.end()), set.end());
}

bool Grammar::advance(const StackSet& in, uint32_t cp, StackSet& out) const {
  out.clear();
  for (const Stack& s : in) {
    if (s.empty() || top(s).kind != ElemKind::kChars || !contains(top_class(s), cp)) continue;
    if (!step_over_top(s, out)) return false;
  }
  sort_unique(out);
  return true;
}

bool Grammar::advance_token(const StackSet& in, int32_t id, bool eog, StackSet& out) const {
  out.clear();
  if (!has_tokens_ || id < 0) return true;
  const auto tok = static_cast<uint32_t>(id);
  for (const Stack& s : in) {
    if (s.empty()) continue;
    const Element& e = top(s);
    const bool match = (e.kind == ElemKind::kToken && e.arg == tok) ||
                       (e.kind == ElemKind::kTokenNot && e.arg != tok && !eog);
    if (!match) continue;
    if (!step_over_top(s, out)) return false;
  }
  sort_unique(out);
  return true;
}

}  // namespace ridge::grammar
