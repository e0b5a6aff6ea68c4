#include "engine/drafter.h"

#include <algorithm>

#include "sampling/draft_draw.h"

namespace ridge::engine {

Drafter::Drafter(std::unique_ptr<Runner> runner, int32_t max_tokens)
    : runner_(std::move(runner)),
      blocks_(runner_->n_blocks(), runner_->block_size(), /*prefix_caching=*/false),
      max_tokens_(max_tokens) {}

void Drafter::drop(Cache& c) {
  blocks_.free_sequence(c.table);
  c.tokens.clear();
}

void Drafter::release(RequestId id) {
  auto it = caches_.find(id);
  if (it == caches_.end()) return;
  drop(it->second);
  caches_.erase(it);
}

int32_t Drafter::n_blocks_used() const { return blocks_.pool().n_used(); }

Result<std::vector<std::vector<int32_t>>> Drafter::propose(std::span<const Work> work) {
  std::vector<std::vector<int32_t>> out(work.size());
  const int64_t bs = runner_->block_size();
  struct Live {
    size_t i;     // into work / out
    Cache* cache;
    sampling::DraftDraw draw;
  };
  std::vector<Live> live;      // sequences whose catch-up fits: they draft
  for (const Work& w : work) {
    if (w.q) w.q->clear();  // nothing drafted where the catch-up does not fit
  }
  std::vector<Cache*> touched;  // every cache this call writes to
  auto fail = [&](const Status& s) {
    for (Cache* c : touched) drop(*c);
    return s;
  };
  // First step: each sequence's catch-up (at least its newest token), within the token budget.
  batch_.clear();
  int32_t budget = max_tokens_;
  for (size_t i = 0; i < work.size() && budget > 0; ++i) {
    const Work& w = work[i];
    Cache& c = caches_[w.id];
    auto shared = static_cast<int32_t>(
        std::mismatch(c.tokens.begin(), c.tokens.end(), w.text.begin(), w.text.end()).first - c.tokens.begin());
    // The newest token's logits are needed: a text the cache already holds whole recomputes it.
    shared = std::min(shared, static_cast<int32_t>(w.text.size()) - 1);
    if (shared < static_cast<int32_t>(c.tokens.size())) {
      c.tokens.resize(static_cast<size_t>(shared));
      blocks_.truncate(c.table, shared);
    }
    const int32_t fresh = static_cast<int32_t>(w.text.size()) - shared;
    const int32_t n = std::min(fresh, budget);
    const bool complete = n == fresh;
    // Slots for the catch-up and, when it completes, the drafts after the first (the last
    // draft is proposed, never evaluated).
    const int32_t reserve = n + (complete ? w.k - 1 : 0);
    if (!blocks_.can_allocate(c.table, reserve)) {
      drop(c);
      continue;
    }
    if (Status s = blocks_.allocate(c.table, reserve); !s.ok()) return fail(s);
    touched.push_back(&c);
    budget -= n;
    const int32_t idx = batch_.add_seq(c.table.blocks, shared + n);
    for (int32_t j = 0; j < n; ++j) {
      batch_.add_token(w.text[static_cast<size_t>(shared + j)], shared + j, idx, complete && j == n - 1, bs);
    }
    c.tokens.insert(c.tokens.end(), w.text.begin() + shared, w.text.begin() + shared + n);
    if (complete) live.push_back({i, &c, sampling::DraftDraw(w.sampler, w.text, w.q)});
  }
  const auto n_vocab = static_cast<size_t>(runner_->n_vocab());
  while (batch_.n_tokens() > 0) {
    Result<std::span<const float>> logits = runner_->run(batch_);
    ++n_steps_;
    if (!logits.ok()) return fail(logits.status());
    // Each live sequence's row, in order; the next step feeds the drafts still wanted.
    size_t row = 0;
    batch_.clear();
    for (Live& l : live) {
      std::vector<int32_t>& d = out[l.i];
      const auto k = static_cast<size_t>(work[l.i].k);
      if (d.size() >= k) continue;
      d.push_back(l.draw.next(logits->subspan(row * n_vocab, n_vocab)));
      ++row;
      if (d.size() >= k) continue;
      Cache& c = *l.cache;
      const auto pos = static_cast<int32_t>(c.tokens.size());
      const int32_t idx = batch_.add_seq(c.table.blocks, pos + 1);
      batch_.add_token(d.back(), pos, idx, true, bs);
      c.tokens.push_back(d.back());
    }
  }
  return out;
}

}  // namespace ridge::engine
