// Checks and flattening of a parsed grammar.
#include "grammar/grammar_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace ridge::grammar {

std::string grammar_where(std::string_view source, size_t pos) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      col = 1;
    } else if ((static_cast<uint8_t>(source[i]) & 0xC0) != 0x80) {
      ++col;
    }
  }
  return fmt::format("grammar: line {} col {}: ", line, col);
}

uint32_t GrammarBuilder::rule_id(std::string_view name, size_t pos) {
  auto it = by_name_.find(std::string(name));
  if (it != by_name_.end()) return it->second;
  const auto id = static_cast<uint32_t>(rules_.size());
  rules_.push_back(BuilderRule{std::string(name), {}, pos, false, false});
  by_name_.emplace(std::string(name), id);
  return id;
}

uint32_t GrammarBuilder::add_synthetic(std::string_view base, size_t pos,
                                       std::vector<std::vector<Element>> alts) {
  const auto id = static_cast<uint32_t>(rules_.size());
  rules_.push_back(BuilderRule{fmt::format("{}-{}", base, id), std::move(alts), pos, true, true});
  return id;
}

uint32_t GrammarBuilder::add_class(std::vector<CharRange> ranges, bool negated) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CharRange& a, const CharRange& b) { return a.lo < b.lo; });
  std::vector<CharRange> merged;
  for (const CharRange& r : ranges) {
    if (r.lo > r.hi) continue;
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  if (negated) {
    std::vector<CharRange> comp;
    uint32_t next = 0;
    for (const CharRange& r : merged) {
      if (r.lo > next) comp.push_back({next, r.lo - 1});
      next = r.hi + 1;
    }
    if (next <= 0x10FFFF) comp.push_back({next, 0x10FFFF});
    merged = std::move(comp);
  }
  // Identical classes share an index (strings repeat the same characters a lot).
  for (size_t i = 0; i < classes_.size(); ++i) {
    const auto& c = classes_[i];
    if (c.size() == merged.size() &&
        std::equal(c.begin(), c.end(), merged.begin(), [](const CharRange& a, const CharRange& b) {
          return a.lo == b.lo && a.hi == b.hi;
        })) {
      return static_cast<uint32_t>(i);
    }
    if (i > 256) break;  // a linear scan only over the first few
  }
  classes_.push_back(std::move(merged));
  return static_cast<uint32_t>(classes_.size() - 1);
}

namespace {

std::string display_name(const BuilderRule& r) {
  return r.synthetic ? fmt::format("'{}' (a group or repetition)", r.name)
                     : fmt::format("'{}'", r.name);
}

}  // namespace

Result<std::shared_ptr<const Grammar>> GrammarBuilder::build(std::string_view source,
                                                             std::string_view root) {
  for (const BuilderRule& r : rules_) {
    if (!r.defined) {
      return Status::usage(grammar_where(source, r.pos) +
                           fmt::format("undefined rule '{}'", r.name));
    }
  }
  auto root_it = by_name_.find(std::string(root));
  if (root_it == by_name_.end()) {
    return Status::usage(grammar_where(source, source.size()) +
                         fmt::format("missing root rule '{}'", root));
  }
  const size_t n = rules_.size();
  auto elem_ok = [&](const Element& e, const std::vector<char>& flag) {
    if (e.kind == ElemKind::kChars) return !classes_[e.arg].empty();
    if (is_token_kind(e.kind)) return true;
    return flag[e.arg] != 0;
  };
  // Productive rules: some alternative made only of non-empty classes and productive rules.
  std::vector<char> productive(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (productive[i]) continue;
      for (const auto& alt : rules_[i].alts) {
        if (std::all_of(alt.begin(), alt.end(),
                        [&](const Element& e) { return elem_ok(e, productive); })) {
          productive[i] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (!productive[i]) {
      return Status::usage(grammar_where(source, rules_[i].pos) +
                           fmt::format("rule {} can never match (it has no finite expansion, or "
                                       "an empty character class)",
                                       display_name(rules_[i])));
    }
  }
  // Nullable rules, then the "may start with" graph; a cycle in it is left recursion.
  std::vector<char> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (nullable[i]) continue;
      for (const auto& alt : rules_[i].alts) {
        if (std::all_of(alt.begin(), alt.end(), [&](const Element& e) {
              return e.kind == ElemKind::kRule && nullable[e.arg];
            })) {
          nullable[i] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  std::vector<std::vector<uint32_t>> starts(n);
  for (size_t i = 0; i < n; ++i) {
    for (const auto& alt : rules_[i].alts) {
      for (const Element& e : alt) {
        if (e.kind != ElemKind::kRule) break;
        starts[i].push_back(e.arg);
        if (!nullable[e.arg]) break;
      }
    }
  }
  // Iterative DFS with colours: 1 = on the path, 2 = done.
  std::vector<uint8_t> colour(n, 0);
  for (size_t s = 0; s < n; ++s) {
    if (colour[s]) continue;
    std::vector<std::pair<uint32_t, size_t>> path{{static_cast<uint32_t>(s), 0}};
    colour[s] = 1;
    while (!path.empty()) {
      auto& [v, next] = path.back();
      if (next == starts[v].size()) {
        colour[v] = 2;
        path.pop_back();
        continue;
      }
      const uint32_t w = starts[v][next++];
      if (colour[w] == 1) {
        return Status::usage(grammar_where(source, rules_[w].pos) +
                             fmt::format("left recursion in rule {} (it can reach itself without "
                                         "consuming input)",
                                         display_name(rules_[w])));
      }
      if (colour[w] == 0) {
        colour[w] = 1;
        path.emplace_back(w, 0);
      }
    }
  }
  // Flatten.
  std::vector<Element> elems;
  std::vector<Rule> rules(n);
  for (size_t i = 0; i < n; ++i) {
    rules[i].name = rules_[i].name;
    for (const auto& alt : rules_[i].alts) {
      rules[i].alts.push_back(static_cast<int32_t>(elems.size()));
      elems.insert(elems.end(), alt.begin(), alt.end());
      elems.push_back(Element{ElemKind::kEnd, 0});
    }
  }
  auto g = std::make_shared<const Grammar>(std::move(elems), std::move(classes_), std::move(rules),
                                           root_it->second);
  if (!g->initial_ok()) {
    return Status::usage(grammar_where(source, 0) +
                         "the start state is too large (too many alternatives at the start)");
  }
  return std::shared_ptr<const Grammar>(std::move(g));
}

}  // namespace ridge::grammar
