#include "model/recurrent_batch.h"

#include <vector>

namespace ridge::model {
namespace {

// The positions [first, last + 1] of each sequence's rows in the batch.
struct PositionSpan {
  int32_t first = 0, end = 0;
};

std::vector<PositionSpan> position_spans(const Batch& batch) {
  std::vector<PositionSpan> spans(batch.context_lens.size(), {-1, -1});
  for (int64_t t = 0; t < batch.n_tokens(); ++t) {
    PositionSpan& p = spans[static_cast<size_t>(batch.seq_index[static_cast<size_t>(t)])];
    const int32_t pos = batch.positions[static_cast<size_t>(t)];
    if (p.first < 0) p.first = pos;
    p.end = pos + 1;
  }
  return spans;
}

// Each snapshot names a sequence with rows here, a point within them, and a slot of its own.
Status check_snapshots(const Batch& batch, const kv::RecurrentState& states,
                       const std::vector<uint8_t>& has_rows, std::vector<uint8_t>& slot_used) {
  if (batch.state_snapshots.empty()) return ok_status();
  const std::vector<PositionSpan> spans = position_spans(batch);
  for (const Batch::StateSnapshot& snap : batch.state_snapshots) {
    if (snap.seq < 0 || static_cast<size_t>(snap.seq) >= has_rows.size() ||
        !has_rows[static_cast<size_t>(snap.seq)]) {
      return error("forward: a state snapshot of sequence {}, which has no rows in the step", snap.seq);
    }
    const PositionSpan& p = spans[static_cast<size_t>(snap.seq)];
    if (snap.n_positions < p.first || snap.n_positions > p.end) {
      return error("forward: a state snapshot after {} positions of sequence {}, whose rows here "
                   "run from position {} to {}", snap.n_positions, snap.seq, p.first, p.end - 1);
    }
    if (snap.slot < 0 || snap.slot >= states.n_slots()) {
      return error("forward: a state snapshot into slot {} of {}", snap.slot, states.n_slots());
    }
    if (slot_used[static_cast<size_t>(snap.slot)]) {
      return error("forward: recurrent-state slot {} used twice", snap.slot);
    }
    slot_used[static_cast<size_t>(snap.slot)] = 1;
  }
  return ok_status();
}

}  // namespace

Status check_recurrent_batch(const Batch& batch, const kv::RecurrentState& states) {
  if (states.n_slots() == 0) return error("forward: this model keeps recurrent state, the cache has none");
  if (batch.state_slots.size() != batch.context_lens.size()) {
    return error("forward: {} recurrent-state slots for {} sequences", batch.state_slots.size(),
                 batch.context_lens.size());
  }
  std::vector<uint8_t> seen(batch.context_lens.size(), 0), slot_used(static_cast<size_t>(states.n_slots()), 0);
  for (int64_t t = 0; t < batch.n_tokens(); ++t) {
    const auto s = static_cast<size_t>(batch.seq_index[static_cast<size_t>(t)]);
    const int32_t pos = batch.positions[static_cast<size_t>(t)];
    const bool continues = t > 0 && batch.seq_index[static_cast<size_t>(t - 1)] == batch.seq_index[static_cast<size_t>(t)];
    if (continues) {
      if (pos != batch.positions[static_cast<size_t>(t - 1)] + 1) {
        return error("forward: row {} (position {}) does not follow its sequence's previous row", t, pos);
      }
      continue;
    }
    if (seen[s]) return error("forward: sequence {}'s rows are not together (row {})", s, t);
    seen[s] = 1;
    const int32_t slot = batch.state_slots[s];
    if (slot < 0 || slot >= states.n_slots()) {
      return error("forward: sequence {} has recurrent-state slot {} of {}", s, slot, states.n_slots());
    }
    if (slot_used[static_cast<size_t>(slot)]) return error("forward: recurrent-state slot {} used twice", slot);
    slot_used[static_cast<size_t>(slot)] = 1;
    if (pos != 0 && pos != states.positions(slot)) {
      return error("forward: sequence {} starts at position {} but its recurrent state holds {} "
                   "positions (a state cannot be rolled back: start again at 0)", s, pos,
                   states.positions(slot));
    }
  }
  return check_snapshots(batch, states, seen, slot_used);
}

}  // namespace ridge::model
