#include "engine/recurrent_slots.h"

#include <algorithm>

#include "base/check.h"

namespace ridge::engine {

RecurrentSlots::RecurrentSlots(int32_t n_seqs, int32_t n_spare, int32_t n_cached, int32_t block_size)
    : block_size_(block_size),
      n_spare_(n_spare),
      owner_(static_cast<size_t>(n_seqs + n_spare), 0),
      held_(static_cast<size_t>(n_seqs + n_spare), 0),
      cache_(n_seqs + n_spare, n_cached, block_size) {
  RIDGE_CHECK(n_seqs > 0 && n_spare >= 0 && n_cached >= 0 && block_size > 0);
}

size_t RecurrentSlots::usable_blocks(const kv::PrefixMatch& match, std::span<const int32_t> tokens) const {
  const auto bs = static_cast<size_t>(block_size_);
  for (size_t n = match.blocks.size(); n > 0; --n) {
    const kv::StateKey key{match.hashes[n - 1], n >= 2 ? match.hashes[n - 2] : kv::kRootBlockHash,
                           tokens.subspan((n - 1) * bs, bs)};
    if (cache_.contains(key)) return n;
  }
  return 0;
}

void RecurrentSlots::begin_step(std::span<Sequence* const> running) {
  std::fill(held_.begin(), held_.end(), 0);
  for (const Sequence* r : running) {
    const int32_t s = r->state_slot;
    if (s >= 0 && owner_[static_cast<size_t>(s)] == r->id) held_[static_cast<size_t>(s)] = 1;
  }
  taken_.clear();
}

kv::StateKey RecurrentSlots::key_at(const Sequence& seq, int32_t n_positions) {
  RIDGE_CHECK(n_positions > 0 && n_positions % block_size_ == 0 && n_positions <= seq.n_tokens());
  const auto bs = static_cast<size_t>(block_size_);
  const auto n_blocks = static_cast<size_t>(n_positions) / bs;
  const std::span<const int32_t> tokens(seq.tokens);
  // Chain hashes of the leading blocks: the published ones, then the rest as cache_computed will
  // publish them.
  chain_.assign(seq.table.hashes.begin(), seq.table.hashes.begin() + static_cast<std::ptrdiff_t>(std::min(n_blocks, seq.table.hashes.size())));
  for (size_t b = chain_.size(); b < n_blocks; ++b) {
    chain_.push_back(kv::hash_block(b == 0 ? kv::kRootBlockHash : chain_[b - 1], tokens.subspan(b * bs, bs)));
  }
  return {chain_[n_blocks - 1], n_blocks >= 2 ? chain_[n_blocks - 2] : kv::kRootBlockHash,
          tokens.subspan((n_blocks - 1) * bs, bs)};
}

int32_t RecurrentSlots::spare_slot() {
  for (size_t s = 0; s < held_.size(); ++s) {
    if (held_[s]) continue;
    held_[s] = 1;
    return static_cast<int32_t>(s);
  }
  return -1;
}

int32_t RecurrentSlots::live_slot(const ScheduledChunk& c, Runner& runner) {
  Sequence& seq = *c.seq;
  int32_t slot = seq.state_slot;
  if (slot < 0 || owner_[static_cast<size_t>(slot)] != seq.id) {
    slot = spare_slot();
    if (slot >= 0) owner_[static_cast<size_t>(slot)] = seq.id;
    seq.state_slot = slot;
  }
  if (slot >= 0 && c.admitted && c.start > 0) {
    // The scheduler admitted it at a cached state (usable_blocks); nothing was taken since.
    const auto from = cache_.find(key_at(seq, c.start));
    RIDGE_CHECK(from.has_value());
    runner.copy_state(*from, slot);
  }
  return slot;
}

void RecurrentSlots::take(Sequence& seq, int32_t n_positions, int32_t idx, bool generating, model::Batch& batch) {
  const kv::StateKey key = key_at(seq, n_positions);
  const auto slot = cache_.take(key);
  if (!slot) return;  // cached already, or every slot is being written
  batch.state_snapshots.push_back({idx, n_positions, *slot});
  taken_.push_back({&seq, *slot, key.hash, generating});
}

void RecurrentSlots::plan_snapshots(const ScheduledChunk& c, int32_t idx, model::Batch& batch) {
  Sequence& seq = *c.seq;
  seq.draft_state_slots.clear();
  if (c.n_draft > 0) {  // the state after each draft token, for verified()
    for (int32_t j = 1; j <= c.n_draft; ++j) {
      const int32_t slot = spare_slot();
      RIDGE_CHECK(slot >= 0);  // the engine drafts at most n_spare rows per step
      batch.state_snapshots.push_back({idx, c.start + j, slot});
      seq.draft_state_slots.push_back(slot);
    }
    return;
  }
  if (cache_.n_slots() == 0) return;
  const int32_t bs = block_size_, begin = c.start, end = c.start + c.n_new;
  const auto crossed = [&](int32_t n) { return n > begin && n <= end; };
  // Where a cached prefix outlived its state: prompts that share this prefix part here.
  const int32_t shared = seq.kv_prefix_tokens;
  if (crossed(shared)) take(seq, shared, idx, false, batch);
  if (shared <= end) seq.kv_prefix_tokens = 0;
  // The prompt's last block boundary that a prompt of the same tokens can start at.
  const int32_t prompt_end = (seq.n_prompt - 1) / bs * bs;
  if (prompt_end != shared && crossed(prompt_end)) take(seq, prompt_end, idx, false, batch);
  // Every interval_ positions of the prompt before that (the oldest are evicted first).
  for (int32_t n = interval_ > 0 ? (begin / interval_ + 1) * interval_ : end + 1; n < prompt_end && n <= end;
       n += interval_) {
    if (n != shared) take(seq, n, idx, false, batch);
  }
  // While it generates: its latest block boundary.
  const int32_t latest = end / bs * bs;
  if (begin >= seq.n_prompt && crossed(latest)) take(seq, latest, idx, true, batch);
}

void RecurrentSlots::end_step(bool ok) {
  for (const Taken& t : taken_) {
    if (!ok) {
      cache_.abandon(t.slot);
      continue;
    }
    cache_.publish(t.slot);
    if (t.generating) set_generating(*t.seq, t.slot, t.hash);
  }
  taken_.clear();
}

void RecurrentSlots::set_generating(Sequence& seq, int32_t slot, kv::BlockHash hash) {
  if (seq.gen_snapshot_slot >= 0) cache_.release(seq.gen_snapshot_slot, seq.gen_snapshot_hash);
  seq.gen_snapshot_slot = slot;
  seq.gen_snapshot_hash = hash;
}

void RecurrentSlots::verified(const ScheduledChunk& c, int32_t n_kept, Runner& runner) {
  Sequence& seq = *c.seq;
  RIDGE_CHECK(c.n_draft > 0 && n_kept >= 1 && n_kept <= c.n_draft + 1 &&
              seq.draft_state_slots.size() == static_cast<size_t>(c.n_draft));
  // The state after `n` of the chunk's rows: a snapshot, or after all of them the live slot.
  const auto state_after = [&](int32_t n) {
    return n <= c.n_draft ? seq.draft_state_slots[static_cast<size_t>(n - 1)] : seq.state_slot;
  };
  const int32_t end = c.start + n_kept, boundary = end / block_size_ * block_size_;
  if (cache_.n_slots() > 0 && boundary > c.start) {  // generating past a block boundary
    const kv::StateKey key = key_at(seq, boundary);
    if (const auto to = cache_.take(key)) {
      runner.copy_state(state_after(boundary - c.start), *to);
      cache_.publish(*to);
      set_generating(seq, *to, key.hash);
    }
  }
  if (n_kept <= c.n_draft) {
    const int32_t slot = state_after(n_kept);
    owner_[static_cast<size_t>(seq.state_slot)] = 0;
    owner_[static_cast<size_t>(slot)] = seq.id;
    seq.state_slot = slot;
  }
  seq.draft_state_slots.clear();
}

}  // namespace ridge::engine
