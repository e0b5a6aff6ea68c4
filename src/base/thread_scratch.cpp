#include "base/thread_scratch.h"

#include <new>

#include "base/check.h"

namespace ridge {
namespace {

constexpr std::align_val_t kAlign{64};

void* allocate(size_t bytes) { return ::operator new(bytes, kAlign); }
void release(void* p) { ::operator delete(p, kAlign); }

struct Slots {
  void* data[kScratchSlots] = {};
  size_t capacity[kScratchSlots] = {};
  bool in_use[kScratchSlots] = {};
  ~Slots() {
    for (void* p : data) {
      if (p != nullptr) release(p);
    }
  }
};

thread_local Slots t_slots;

}  // namespace

ThreadScratch::ThreadScratch(ScratchSlot slot, size_t bytes) {
  RIDGE_CHECK(slot >= 0 && slot < kScratchSlots);
  bytes = bytes < 64 ? 64 : bytes;  // never a zero-size buffer; an empty slot has capacity 0
  if (bytes > kThreadScratchBytes) {
    data_ = allocate(bytes);
    return;
  }
  Slots& s = t_slots;
  RIDGE_CHECK(!s.in_use[slot]);
  if (s.capacity[slot] < bytes) {
    if (s.data[slot] != nullptr) release(s.data[slot]);
    s.data[slot] = nullptr;  // a throwing allocation leaves the slot empty, not dangling
    s.capacity[slot] = 0;
    s.data[slot] = allocate(bytes);
    s.capacity[slot] = bytes;
  }
  s.in_use[slot] = true;
  slot_ = slot;
  data_ = s.data[slot];
}

ThreadScratch::~ThreadScratch() {
  if (slot_ >= 0) {
    t_slots.in_use[slot_] = false;
  } else {
    release(data_);
  }
}

}  // namespace ridge
