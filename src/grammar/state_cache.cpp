// The mask walk: one pass over the vocabulary trie in preorder, skipping a subtree at its first
// rejected byte, with DFA transitions computed on first use and masks memoised per state.
#include "grammar/state_cache.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ridge::grammar {
namespace {

std::string key_of(const StackSet& set) {
  std::string key;
  for (const Stack& s : set) {
    const auto n = static_cast<int32_t>(s.size());
    key.append(reinterpret_cast<const char*>(&n), sizeof n);
    key.append(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(int32_t));
  }
  return key;
}

// kSpread[b]: eight bytes, byte i = bit i of b (little-endian bit order within the word).
constexpr std::array<uint64_t, 256> make_spread() {
  std::array<uint64_t, 256> t{};
  for (unsigned b = 0; b < 256; ++b) {
    uint64_t v = 0;
    for (unsigned i = 0; i < 8; ++i) {
      if (b & (1u << i)) v |= uint64_t{1} << (8 * i);
    }
    t[b] = v;
  }
  return t;
}
constexpr std::array<uint64_t, 256> kSpread = make_spread();

}  // namespace

StateCache::StateCache(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenIndex> idx)
    : g_(std::move(g)), idx_(std::move(idx)) {}

int32_t StateCache::intern(const std::shared_ptr<const StackSet>& stacks) {
  std::string key = key_of(*stacks);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  State st;
  st.stacks = stacks;
  st.ascii.fill(kUnknown);
  std::vector<CharRange> all;
  std::vector<uint32_t> cuts;
  bool first_not = true;
  for (const Stack& s : *stacks) {
    if (s.empty()) {
      st.complete = true;
      continue;
    }
    const Element& top = g_->top(s);
    if (top.kind == ElemKind::kToken) {
      st.tokens.push_back(static_cast<int32_t>(top.arg));
      continue;
    }
    if (top.kind == ElemKind::kTokenNot) {
      const auto x = static_cast<int32_t>(top.arg);
      st.not_excluded = first_not || st.not_excluded == x ? x : -1;
      st.any_not = true;
      first_not = false;
      continue;
    }
    const auto& cls = g_->top_class(s);
    all.insert(all.end(), cls.begin(), cls.end());
    for (const CharRange& r : cls) {
      cuts.push_back(r.lo);
      cuts.push_back(r.hi + 1);
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::sort(all.begin(), all.end(),
            [](const CharRange& a, const CharRange& b) { return a.lo < b.lo; });
  for (const CharRange& r : all) {
    if (!st.first.empty() && r.lo <= st.first.back().hi + 1) {
      st.first.back().hi = std::max(st.first.back().hi, r.hi);
    } else {
      st.first.push_back(r);
    }
  }
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    if (Grammar::contains(st.first, cuts[i])) {
      st.spans.push_back(State::Span{cuts[i], cuts[i + 1] - 1, kUnknown});
    }
  }
  std::sort(st.tokens.begin(), st.tokens.end());
  st.tokens.erase(std::unique(st.tokens.begin(), st.tokens.end()), st.tokens.end());
  state_bytes_ += sizeof(State) + 2 * key.size() + st.first.size() * sizeof(CharRange) +
                  st.spans.size() * sizeof(State::Span) + st.tokens.size() * sizeof(int32_t);
  const auto id = static_cast<int32_t>(states_.size());
  states_.push_back(std::move(st));
  index_.emplace(std::move(key), id);
  return id;
}

void StateCache::token_bits(const State& st, std::vector<uint64_t>& bits) const {
  const int32_t n = idx_->n_vocab();
  auto set = [&](int32_t t) {
    if (t >= 0 && t < n) bits[static_cast<size_t>(t) >> 6] |= uint64_t{1} << (t & 63);
  };
  if (st.any_not) {
    // Bits already set (the text walk) stay; all others but EOG and the excluded id are set.
    std::vector<uint64_t> keep = bits;
    for (uint64_t& w : bits) w = ~uint64_t{0};
    if (n % 64 != 0 && !bits.empty()) bits.back() = (uint64_t{1} << (n % 64)) - 1;
    auto clear = [&](int32_t t) {
      if (t >= 0 && t < n) bits[static_cast<size_t>(t) >> 6] &= ~(uint64_t{1} << (t & 63));
    };
    for (int32_t e : idx_->eog_ids()) clear(e);
    clear(st.not_excluded);
    for (size_t i = 0; i < bits.size(); ++i) bits[i] |= keep[i];
  }
  for (int32_t t : st.tokens) set(t);
}

int32_t StateCache::span_of(int32_t s, uint32_t cp) const {
  const auto& spans = states_[static_cast<size_t>(s)].spans;
  auto it = std::upper_bound(spans.begin(), spans.end(), cp,
                             [](uint32_t v, const State::Span& x) { return v < x.lo; });
  if (it == spans.begin() || cp > std::prev(it)->hi) return -1;
  return static_cast<int32_t>(std::prev(it) - spans.begin());
}

int32_t StateCache::compute(int32_t s, uint32_t cp) {
  int32_t result = kDead;
  const int32_t span = span_of(s, cp);
  if (span >= 0) {
    result = states_[static_cast<size_t>(s)].spans[static_cast<size_t>(span)].next;
    if (result == kUnknown) {
      result = kDead;
      const std::shared_ptr<const StackSet> cur = states_[static_cast<size_t>(s)].stacks;
      if (g_->advance(*cur, cp, scratch_) && !scratch_.empty()) {
        result = intern(std::make_shared<const StackSet>(scratch_));
      }
      states_[static_cast<size_t>(s)].spans[static_cast<size_t>(span)].next = result;
    }
  }
  if (cp < 128) states_[static_cast<size_t>(s)].ascii[cp] = result;
  return result;
}

int32_t StateCache::next(int32_t s, uint32_t cp) {
  if (cp < 128) {
    const int32_t n = states_[static_cast<size_t>(s)].ascii[cp];
    return n != kUnknown ? n : compute(s, cp);
  }
  const int32_t span = span_of(s, cp);
  if (span < 0) return kDead;
  const int32_t n = states_[static_cast<size_t>(s)].spans[static_cast<size_t>(span)].next;
  return n != kUnknown ? n : compute(s, cp);
}

void StateCache::walk(int32_t s0, Utf8Partial p0, std::vector<uint64_t>& bits) {
  struct At {
    int32_t s;
    Utf8Partial p;
  };
  const auto& nodes = idx_->nodes();
  const auto& toks = idx_->node_tokens();
  std::vector<At> at(idx_->max_depth() + 1);
  at[0] = At{s0, p0};
  for (size_t i = 1; i < nodes.size();) {
    const TokenIndex::Node& n = nodes[i];
    At w = at[n.depth - 1u];
    bool ok = true;
    if (w.p.need == 0 && n.byte < 0x80) {
      const int32_t t = states_[static_cast<size_t>(w.s)].ascii[n.byte];
      w.s = t != kUnknown ? t : compute(w.s, n.byte);
      ok = w.s >= 0;
    } else {
      uint32_t cp = 0;
      const Utf8Step r = utf8_feed(w.p, n.byte, &cp);
      if (r == Utf8Step::kInvalid) {
        ok = false;
      } else if (r == Utf8Step::kComplete) {
        w.s = next(w.s, cp);
        ok = w.s >= 0;
      } else {
        uint32_t lo = 0, hi = 0;
        utf8_completions(w.p, &lo, &hi);
        ok = Grammar::intersects(states_[static_cast<size_t>(w.s)].first, lo, hi);
      }
    }
    if (!ok) {
      i = n.skip;
      continue;
    }
    at[n.depth] = w;
    for (uint32_t k = n.tok_begin; k < n.tok_end; ++k) {
      const auto t = static_cast<uint32_t>(toks[k]);
      bits[t >> 6] |= uint64_t{1} << (t & 63);
    }
    ++i;
  }
}

void StateCache::trim() {
  size_t mask_bytes = masks_.size() * ((static_cast<size_t>(idx_->n_vocab()) + 63) / 64) * 8;
  if (states_.size() > kMaxStates) {
    states_.clear();
    index_.clear();
    masks_.clear();
    state_bytes_ = 0;
  } else if (mask_bytes > kMaxMaskBytes) {
    masks_.clear();
    for (State& st : states_) st.mask = -1;
  }
}

StateCache::Stats StateCache::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return Stats{states_.size(), masks_.size(), mask_hits_, mask_walks_};
}

void StateCache::fill_mask(const std::shared_ptr<const StackSet>& stacks,
                           const Utf8Partial& partial, std::vector<uint8_t>& allowed) {
  const auto n_vocab = static_cast<size_t>(idx_->n_vocab());
  const size_t n_words = (n_vocab + 63) / 64;
  allowed.assign(n_vocab, 0);
  std::lock_guard<std::mutex> lock(mu_);
  trim();
  const int32_t s = intern(stacks);
  std::vector<uint64_t> local;
  const std::vector<uint64_t>* bits = nullptr;
  if (partial.need == 0 && states_[static_cast<size_t>(s)].mask >= 0) {
    bits = &masks_[static_cast<size_t>(states_[static_cast<size_t>(s)].mask)];
    ++mask_hits_;
  } else {
    ++mask_walks_;
    local.assign(n_words, 0);
    walk(s, partial, local);
    if (partial.need == 0) {
      token_bits(states_[static_cast<size_t>(s)], local);
      if (states_[static_cast<size_t>(s)].complete) {
        for (int32_t e : idx_->eog_ids()) {
          local[static_cast<size_t>(e) >> 6] |= uint64_t{1} << (static_cast<uint32_t>(e) & 63);
        }
      }
      states_[static_cast<size_t>(s)].mask = static_cast<int32_t>(masks_.size());
      masks_.push_back(std::move(local));
      bits = &masks_.back();
    } else {
      bits = &local;
    }
  }
  bytes_.store(state_bytes_ + masks_.size() * n_words * 8, std::memory_order_relaxed);
  // Eight mask bytes per bitmap byte.
  uint8_t* out = allowed.data();
  const auto* bb = reinterpret_cast<const uint8_t*>(bits->data());
  const size_t full = n_vocab / 8;
  for (size_t i = 0; i < full; ++i) std::memcpy(out + 8 * i, &kSpread[bb[i]], 8);
  for (size_t t = full * 8; t < n_vocab; ++t)
    out[t] = static_cast<uint8_t>((bb[t / 8] >> (t % 8)) & 1);
}

}  // namespace ridge::grammar
