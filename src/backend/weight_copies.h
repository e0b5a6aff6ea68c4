// A device backend's copies of the model's weights (model/weights.h regions), found by the host
// address the model names them by: the ops take the model's host pointers and read the copy that
// holds the same byte. Header-only: the CUDA library and the test backend both use it.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "base/device_memory.h"
#include "base/status.h"
#include "model/weights.h"

namespace ridge::backend {

class WeightCopies {
 public:
  // Copies every region of `weights` into `memory` (replacing what was loaded before).
  Status load(const model::Weights& weights, DeviceMemory& memory) {
    copies_.clear();
    for (const model::WeightRegion& r : weights.regions) {
      if (r.bytes == 0) continue;
      Result<DeviceBuffer> copy = memory.allocate(r.bytes, MemoryUse::kStream);
      if (!copy.ok()) return copy.status().with_prefix(r.name);
      memory.to_device(copy->get(), r.data, r.bytes);
      copies_[static_cast<const uint8_t*>(r.data)] = Copy{r.bytes, std::move(copy).value()};
    }
    return ok_status();
  }
  // The copy of the byte at host address p; null when no region holds it (or p is null).
  const void* find(const void* p) const {
    if (p == nullptr) return nullptr;
    const auto* host = static_cast<const uint8_t*>(p);
    auto it = copies_.upper_bound(host);
    if (it == copies_.begin()) return nullptr;
    --it;
    if (host >= it->first + it->second.bytes) return nullptr;
    return static_cast<const uint8_t*>(it->second.buffer.get()) + (host - it->first);
  }

 private:
  struct Copy {
    uint64_t bytes = 0;
    DeviceBuffer buffer;
  };
  std::map<const uint8_t*, Copy> copies_;  // by host address
};

}  // namespace ridge::backend
