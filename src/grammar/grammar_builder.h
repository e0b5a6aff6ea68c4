// The grammar as parsed, before flattening: named and synthetic rules whose alternatives are
// element lists. build_grammar() checks it (undefined rules, a root, rules that can never
// complete, left recursion) and flattens it into a Grammar.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "grammar/grammar.h"

namespace ridge::grammar {

struct BuilderRule {
  std::string name;  // synthetic rules: "name-N"
  std::vector<std::vector<Element>> alts;
  size_t pos = 0;  // source offset of the definition (or of the first reference)
  bool defined = false;
  bool synthetic = false;
};

class GrammarBuilder {
 public:
  static constexpr size_t kMaxElements = size_t{1} << 20;

  // The index of a named rule, created (undefined) on first use.
  uint32_t rule_id(std::string_view name, size_t pos);
  uint32_t add_synthetic(std::string_view base, size_t pos, std::vector<std::vector<Element>> alts);
  // Sorts and merges the ranges; negated classes are complemented over [0, 0x10FFFF].
  uint32_t add_class(std::vector<CharRange> ranges, bool negated);
  std::vector<BuilderRule>& rules() { return rules_; }
  // Counts elements; false once the grammar has grown past kMaxElements.
  bool charge(size_t n) {
    n_elems_ += n;
    return n_elems_ <= kMaxElements;
  }

  Result<std::shared_ptr<const Grammar>> build(std::string_view source, std::string_view root);

 private:
  std::vector<BuilderRule> rules_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::vector<std::vector<CharRange>> classes_;
  size_t n_elems_ = 0;
};

// "grammar: line L col C: " for a byte offset into source.
std::string grammar_where(std::string_view source, size_t pos);

}  // namespace ridge::grammar
