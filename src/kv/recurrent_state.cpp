#include "kv/recurrent_state.h"

#include "base/check.h"

namespace ridge::kv {

uint64_t recurrent_slot_bytes(const RecurrentStateConfig& cfg) {
  if (cfg.n_layer <= 0 || cfg.floats_per_layer <= 0) return 0;
  const auto layers = static_cast<uint64_t>(cfg.n_layer);
  const auto floats = static_cast<uint64_t>(cfg.floats_per_layer);
  if (floats > UINT64_MAX / 4 / layers) return 0;
  return layers * floats * 4;
}

Result<RecurrentState> RecurrentState::create(const RecurrentStateConfig& cfg, DeviceMemory& memory) {
  const uint64_t slot = recurrent_slot_bytes(cfg);
  if (slot == 0 || cfg.n_slots <= 0 || cfg.n_slots > (int64_t{1} << 20) ||
      slot > UINT64_MAX / static_cast<uint64_t>(cfg.n_slots)) {
    return error("recurrent state: invalid config ({} layers of {} floats, {} slots)", cfg.n_layer,
                 cfg.floats_per_layer, cfg.n_slots);
  }
  RecurrentState s;
  s.cfg_ = cfg;
  Result<DeviceBuffer> storage =
      memory.allocate(static_cast<size_t>(slot * static_cast<uint64_t>(cfg.n_slots)), MemoryUse::kStream);
  if (!storage.ok()) {
    return error("recurrent state: cannot allocate {} bytes ({} slots of {}) in {} memory",
                 slot * static_cast<uint64_t>(cfg.n_slots), cfg.n_slots, slot, memory.name());
  }
  s.storage_ = std::move(*storage);
  s.positions_.assign(static_cast<size_t>(cfg.n_slots), 0);
  return s;
}

float* RecurrentState::data(int64_t layer, int64_t slot) {
  RIDGE_CHECK(layer >= 0 && layer < cfg_.n_layer && slot >= 0 && slot < cfg_.n_slots);
  return static_cast<float*>(storage_.get()) + (slot * cfg_.n_layer + layer) * cfg_.floats_per_layer;
}

void RecurrentState::reset(int64_t slot) {
  storage_.memory()->zero(data(0, slot), static_cast<size_t>(recurrent_slot_bytes(cfg_)));
  positions_[static_cast<size_t>(slot)] = 0;
}

void RecurrentState::copy_slot(int64_t from, int64_t to) {
  if (from == to) return;
  storage_.memory()->copy(data(0, to), data(0, from), static_cast<size_t>(recurrent_slot_bytes(cfg_)));
  positions_[static_cast<size_t>(to)] = positions_[static_cast<size_t>(from)];
}

}  // namespace ridge::kv
