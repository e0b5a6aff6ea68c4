// Scratch memory for one call of a hot path, on the calling thread. A decode step calls the matmul
// driver ~4 times per layer and every kernel thread's rows routine once per call; each needs a
// few KiB (quantized activations, per-row tables). Up to kThreadScratchBytes, a request reuses a
// 64-byte-aligned buffer the thread keeps per slot (grown on demand, freed at thread exit), so a
// decode step does not allocate; a larger request (prefill) is allocated for the call and freed
// with it, so no thread holds more than kScratchSlots * kThreadScratchBytes between calls.
#pragma once

#include <cstddef>

namespace ridge {

// The slots: two live ThreadScratch objects on one thread must use different ones.
enum ScratchSlot : int {
  kScratchActs = 0,          // kScratchActs + t: the matmul driver's activations of format t (< 4)
  kScratchKernelTables = 4,  // a rows routine's per-call tables (K formats' x pair sums)
  kScratchKernelRows = 5,    // a rows routine's x in the order its kernel reads it
  kScratchKernelLanes = 6,   // a rows routine's per-super-block records of one panel
  kScratchKernelPack = 7,    // a prefill rows routine's packed panels
  kScratchKernelAmx = 8,     // those panels' quants as the AMX tiles read them
  kScratchSlots = 9,
};

inline constexpr size_t kThreadScratchBytes = size_t{256} << 10;

class ThreadScratch {
 public:
  ThreadScratch(ScratchSlot slot, size_t bytes);
  ~ThreadScratch();
  ThreadScratch(const ThreadScratch&) = delete;
  ThreadScratch& operator=(const ThreadScratch&) = delete;

  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  int slot_ = -1;        // the thread's slot in use, or -1 when data_ is this call's own
};

}  // namespace ridge
