#include "engine/scheduler.h"

#include <algorithm>

#include "base/timer.h"

namespace ridge::engine {
namespace {

// Waiting-queue order: lower priority value first, then arrival.
bool served_before(const Sequence* a, const Sequence* b) {
  if (a->priority != b->priority) return a->priority < b->priority;
  return a->arrival_order < b->arrival_order;
}

}  // namespace

Scheduler::Scheduler(const SchedulerOptions& opts, kv::BlockManager blocks)
    : opts_(opts), blocks_(std::move(blocks)) {
  RIDGE_CHECK(opts_.max_batched_tokens > 0 && opts_.max_seqs > 0);
}

void Scheduler::add(std::unique_ptr<Sequence> seq) {
  RIDGE_CHECK(seq && seq->table.empty() && seq->n_tokens() > 0);
  Sequence* s = seq.get();
  s->state = SeqState::kWaiting;
  s->n_computed = 0;
  const RequestId id = s->id;
  RIDGE_CHECK(seqs_.emplace(id, std::move(seq)).second);
  insert_waiting(s);
}

void Scheduler::insert_waiting(Sequence* seq) {
  waiting_.insert(std::upper_bound(waiting_.begin(), waiting_.end(), seq, served_before), seq);
}

Sequence* Scheduler::find(RequestId id) {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : it->second.get();
}

std::vector<RequestId> Scheduler::ids() const {
  std::vector<RequestId> out;
  out.reserve(seqs_.size());
  for (const auto& [id, s] : seqs_) out.push_back(id);
  return out;
}

bool Scheduler::fits_alone(int32_t n_tokens) const {
  const int32_t bs = blocks_.block_size();
  const int64_t n_blocks = (int64_t{n_tokens} + bs - 1) / bs;
  if (const kv::BlockPool* w = blocks_.window_pool()) {
    // At most its window and one step's tokens at once.
    if (std::min(n_blocks, kv::window_blocks_for(blocks_.window(), opts_.max_batched_tokens, bs)) > w->n_blocks()) {
      return false;
    }
  }
  return n_blocks <= blocks_.pool().n_blocks();
}

std::unique_ptr<Sequence> Scheduler::remove(RequestId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return nullptr;
  std::unique_ptr<Sequence> seq = std::move(it->second);
  seqs_.erase(it);
  auto& list = seq->state == SeqState::kRunning ? running_ : waiting_;
  list.erase(std::find(list.begin(), list.end(), seq.get()));
  blocks_.free_sequence(seq->table);
  seq->state = SeqState::kFinished;
  return seq;
}

Sequence* Scheduler::pick_victim() const {
  Sequence* victim = nullptr;
  for (Sequence* s : running_) {
    if (victim == nullptr || served_before(victim, s)) victim = s;
  }
  return victim;
}

void Scheduler::preempt(Sequence* victim, SchedulerOutput& out, int32_t& budget) {
  auto chunk = std::find_if(out.chunks.begin(), out.chunks.end(),
                            [&](const ScheduledChunk& c) { return c.seq == victim; });
  if (chunk != out.chunks.end()) {
    budget += chunk->n_new;
    out.n_tokens -= chunk->n_new;
    out.chunks.erase(chunk);
  }
  running_.erase(std::find(running_.begin(), running_.end(), victim));
  blocks_.free_sequence(victim->table);
  victim->n_computed = 0;
  victim->state = SeqState::kWaiting;
  victim->stats.n_preemptions += 1;
  insert_waiting(victim);
  out.n_preempted += 1;
  n_preemptions_ += 1;
}

void Scheduler::schedule_running(SchedulerOutput& out, int32_t& budget) {
  // Decodes first so a long prompt chunk never delays them; stable within each group.
  std::vector<Sequence*> order = running_;
  const auto is_decode = [](const Sequence* s) { return s->n_uncomputed() == 1; };
  const auto first_prompt = std::stable_partition(order.begin(), order.end(), is_decode);
  const bool any_decode = first_prompt != order.begin();
  bool capped = false;
  // Once the decodes are placed, prompt chunks (running ones here, new ones in schedule_waiting)
  // share at most max_prefill_with_decodes tokens.
  const auto cap_prompt_budget = [&] {
    if (capped || !any_decode || opts_.max_prefill_with_decodes <= 0) return;
    capped = true;
    budget = std::min(budget, opts_.max_prefill_with_decodes);
  };
  for (Sequence* seq : order) {
    if (!is_decode(seq)) cap_prompt_budget();
    if (budget <= 0) break;
    if (seq->state != SeqState::kRunning) continue;  // preempted by an earlier one
    const int32_t n_new = std::min(seq->n_uncomputed(), budget);
    RIDGE_CHECK(n_new > 0);
    const int32_t n_more = std::max(0, seq->n_computed + n_new - seq->table.n_tokens);
    bool preempted_self = false;
    while (!blocks_.can_allocate(seq->table, n_more)) {
      Sequence* victim = pick_victim();
      preempt(victim, out, budget);
      if (victim == seq) {
        preempted_self = true;
        break;
      }
    }
    if (preempted_self) continue;
    RIDGE_CHECK(blocks_.allocate(seq->table, n_more).ok());
    out.chunks.push_back({seq, seq->n_computed, n_new, seq->n_computed + n_new == seq->n_tokens()});
    out.n_tokens += n_new;
    budget -= n_new;
  }
  cap_prompt_budget();
}

void Scheduler::schedule_waiting(SchedulerOutput& out, int32_t& budget) {
  while (!waiting_.empty() && budget > 0 && n_running() < opts_.max_seqs) {
    Sequence* seq = waiting_.front();
    kv::PrefixMatch match = blocks_.find_cached_prefix(seq->tokens);
    seq->kv_prefix_tokens = match.n_tokens;
    if (prefix_filter_) blocks_.shorten(match, prefix_filter_(match, seq->tokens));
    const int32_t n_new = std::min(seq->n_tokens() - match.n_tokens, budget);
    if (!blocks_.can_allocate(seq->table, n_new, match)) break;
    RIDGE_CHECK(blocks_.allocate(seq->table, n_new, match).ok());
    seq->n_computed = match.n_tokens;
    if (!seq->admitted_once) {
      seq->admitted_once = true;
      seq->stats.first_scheduled_time = now_seconds();
      seq->stats.n_cached_prompt_tokens = match.n_tokens;
    }
    waiting_.erase(waiting_.begin());
    running_.push_back(seq);
    seq->state = SeqState::kRunning;
    out.chunks.push_back({seq, seq->n_computed, n_new, seq->n_computed + n_new == seq->n_tokens(), 0, true});
    out.n_tokens += n_new;
    budget -= n_new;
  }
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int32_t budget = opts_.max_batched_tokens;
  schedule_running(out, budget);
  if (out.n_preempted == 0) schedule_waiting(out, budget);
  return out;
}

bool Scheduler::add_draft(SchedulerOutput& out, ScheduledChunk& chunk, int32_t k) {
  Sequence& s = *chunk.seq;
  RIDGE_CHECK(chunk.n_draft == 0 && chunk.n_new == 1 && s.n_uncomputed() == 1 && k > 0 &&
              static_cast<size_t>(k) <= s.draft.size());
  if (out.n_tokens + k > opts_.max_batched_tokens) return false;
  const int32_t n_more = std::max(0, s.n_computed + 1 + k - s.table.n_tokens);
  if (!blocks_.can_allocate(s.table, n_more)) return false;
  RIDGE_CHECK(blocks_.allocate(s.table, n_more).ok());
  chunk.n_new += k;
  chunk.n_draft = k;
  out.n_tokens += k;
  return true;
}

bool Scheduler::reserve_draft(const SchedulerOutput& out, ScheduledChunk& chunk, int32_t k) {
  Sequence& s = *chunk.seq;
  RIDGE_CHECK(chunk.n_draft == 0 && chunk.n_new == 1 && s.n_uncomputed() == 1 && k > 0);
  if (out.n_tokens + k > opts_.max_batched_tokens) return false;
  const int32_t n_more = std::max(0, s.n_computed + 1 + k - s.table.n_tokens);
  if (!blocks_.can_allocate(s.table, n_more)) return false;
  RIDGE_CHECK(blocks_.allocate(s.table, n_more).ok());
  return true;
}

void Scheduler::on_verified(const ScheduledChunk& chunk, int32_t n_kept) {
  Sequence& s = *chunk.seq;
  RIDGE_CHECK(s.n_computed == chunk.start && n_kept >= 1 && n_kept <= chunk.n_new);
  s.n_computed += n_kept;
  blocks_.truncate(s.table, s.n_computed);
  blocks_.cache_computed(s.table, s.tokens, s.n_computed);
  blocks_.release_out_of_window(s.table, s.n_computed);
}

void Scheduler::on_computed(const SchedulerOutput& out) {
  for (const ScheduledChunk& c : out.chunks) {
    if (c.n_draft > 0) continue;
    Sequence& s = *c.seq;
    RIDGE_CHECK(s.n_computed == c.start);
    s.n_computed += c.n_new;
    blocks_.cache_computed(s.table, s.tokens, s.n_computed);
    blocks_.release_out_of_window(s.table, s.n_computed);
  }
}

}  // namespace ridge::engine
