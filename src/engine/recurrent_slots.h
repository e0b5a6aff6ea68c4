// RecurrentSlots: the engine's recurrent-state slots for hybrid models (docs/hybrid.md). The
// runner's state store has n_live slots for running sequences, then n_cached for the prefix
// cache's states (kv::StateCache):
//   - a running sequence keeps its live slot; one without (new, or preempted and its slot since
//     taken) gets a slot no running sequence holds;
//   - a prefix-cache hit is usable only up to a block boundary where a state is cached
//     (usable_blocks, the scheduler's prefix filter); an admitted sequence that starts there gets
//     that state copied into its live slot;
//   - the step snapshots states (Batch::state_snapshots) where later prompts will look for them:
//     the end of a cached prefix that outlived its state (the point where prompts that share a
//     prefix part), the prompt's last block boundary, and while a sequence generates, its latest
//     block boundary (the previous one is let go): the next turn of a conversation starts there;
//   - speculative decoding: a verified draft of k tokens snapshots the state after each of them
//     into spare live slots (n_spare, the most draft rows a step may have); once verified, the
//     snapshot after the last kept token becomes the sequence's slot (nothing is copied back).
// Tensor-free apart from Runner::copy_state.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/runner.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "kv/block_manager.h"
#include "kv/state_cache.h"
#include "model/batch.h"

namespace ridge::engine {

class RecurrentSlots {
 public:
  RecurrentSlots() = default;  // a model without recurrent state
  // Slots [0, n_seqs + n_spare) are live or spare, the next n_cached the prefix cache's.
  RecurrentSlots(int32_t n_seqs, int32_t n_spare, int32_t n_cached, int32_t block_size);
  // Also keep the state every `tokens` prompt positions (a multiple of the block size; 0: off),
  // so that a prompt sharing a prefix with an earlier one starts part way in even the first time.
  void set_snapshot_interval(int32_t tokens) { interval_ = tokens; }

  bool enabled() const { return !owner_.empty(); }
  int32_t n_live() const { return static_cast<int32_t>(owner_.size()); }
  // Draft rows a step may verify (each needs a spare slot for its snapshot).
  int32_t n_spare() const { return n_spare_; }
  const kv::StateCache& cache() const { return cache_; }

  // The scheduler's prefix filter: how many of match's leading blocks end at a cached state.
  size_t usable_blocks(const kv::PrefixMatch& match, std::span<const int32_t> tokens) const;

  // Once per step, before the batch is built: the slots the running sequences hold.
  void begin_step(std::span<Sequence* const> running);
  // The chunk's sequence's live slot (-1: none left, the model refuses the step). A sequence just
  // admitted past position 0 gets the cached state it starts at copied into it. Call for every
  // chunk of the step before plan_snapshots (whose slots may evict cached states).
  int32_t live_slot(const ScheduledChunk& c, Runner& runner);
  // Adds the snapshots the chunk takes to batch (idx: the sequence's index in it).
  void plan_snapshots(const ScheduledChunk& c, int32_t idx, model::Batch& batch);
  // After the forward: its snapshots are found from now on (ok), or their slots freed.
  void end_step(bool ok);
  // A draft chunk after verification: the first n_kept of its rows stand. The sequence's slot
  // becomes the snapshot after them; a block boundary among them is kept for the prefix cache.
  void verified(const ScheduledChunk& c, int32_t n_kept, Runner& runner);

 private:
  struct Taken {
    Sequence* seq = nullptr;
    int32_t slot = -1;
    kv::BlockHash hash = 0;
    bool generating = false;  // replaces the sequence's previous snapshot while it generates
  };
  // The key of the state after seq's first n_positions (a multiple of the block size).
  kv::StateKey key_at(const Sequence& seq, int32_t n_positions);
  void take(Sequence& seq, int32_t n_positions, int32_t idx, bool generating, model::Batch& batch);
  int32_t spare_slot();  // a live slot no sequence holds this step (-1: none), now held
  // The sequence's newest generating snapshot is `slot` (its previous one is let go).
  void set_generating(Sequence& seq, int32_t slot, kv::BlockHash hash);

  int32_t block_size_ = 16;
  int32_t interval_ = 0;
  int32_t n_spare_ = 0;
  std::vector<RequestId> owner_;  // [n_live] the sequence that last took each live slot
  std::vector<uint8_t> held_;     // [n_live] held by a running sequence this step
  kv::StateCache cache_;
  std::vector<Taken> taken_;      // this step's snapshots
  std::vector<kv::BlockHash> chain_;  // key_at's scratch
};

}  // namespace ridge::engine
