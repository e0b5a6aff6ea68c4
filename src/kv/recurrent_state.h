// Per-sequence recurrent state of the linear-attention layers (Qwen3.5's Gated DeltaNet),
// beside the paged KV cache: n_slots slots, each holding every linear layer's state (f32,
// floats_per_layer values per layer: the conv rows, then the delta-rule matrices; the model
// decides the layout). A slot is taken by one sequence at a time (the scheduler hands slots out
// as it hands out KV blocks); unlike KV it cannot be rolled back to an earlier position, so each
// slot records how many positions of its sequence it has consumed, and a step that does not
// continue there (or start the sequence at position 0) is refused by the model.
#pragma once

#include <cstdint>
#include <vector>

#include "base/device_memory.h"
#include "base/status.h"

namespace ridge::kv {

struct RecurrentStateConfig {
  int64_t n_layer = 0;           // linear layers
  int64_t floats_per_layer = 0;  // one sequence's state in one layer
  int64_t n_slots = 0;           // sequences that can hold a state at once
};

// Bytes of one slot (every layer); 0 for an empty or overflowing config.
uint64_t recurrent_slot_bytes(const RecurrentStateConfig& cfg);

class RecurrentState {
 public:
  RecurrentState() = default;  // no slots: a model without linear layers
  // The slots in `memory` (a backend's, Backend::memory()).
  static Result<RecurrentState> create(const RecurrentStateConfig& cfg,
                                       DeviceMemory& memory = host_memory());

  const RecurrentStateConfig& config() const { return cfg_; }
  int64_t n_slots() const { return cfg_.n_slots; }
  uint64_t total_bytes() const { return recurrent_slot_bytes(cfg_) * static_cast<uint64_t>(cfg_.n_slots); }

  // Layer `layer`'s state in `slot`: floats_per_layer values (CHECKed indices), in the memory's
  // device.
  float* data(int64_t layer, int64_t slot);
  // Positions of its sequence the slot's state has consumed (0: fresh).
  int32_t positions(int64_t slot) const { return positions_[static_cast<size_t>(slot)]; }
  void set_positions(int64_t slot, int32_t n) { positions_[static_cast<size_t>(slot)] = n; }
  // Zeroes the slot's state (a sequence starting at position 0).
  void reset(int64_t slot);
  // Slot `to` becomes a copy of slot `from` (every layer, and its positions).
  void copy_slot(int64_t from, int64_t to);

 private:
  RecurrentStateConfig cfg_;
  DeviceBuffer storage_;  // [n_slots][n_layer][floats_per_layer]
  std::vector<int32_t> positions_;
};

}  // namespace ridge::kv
