// Per-thread queues of work units for one parallel region, with stealing: each thread starts on
// its own contiguous share (so it streams it in order, as a static split would), claims it from
// the front in shrinking chunks, and when its queue is empty takes the back half of the fullest
// other queue. A thread that the host deschedules, or that streams slower, then no longer holds
// the region's end: in a Qwen3-1.7B decode at 2 threads each thread waited 6-8% of every
// region's time for the other with the static split, 0.5-2% with these queues (docs/kernels.md,
// Threads).
//
// Who runs a unit never changes what it computes, so callers stay batch invariant as long as a
// unit's result depends only on the unit.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

#include "base/check.h"

namespace ridge {

class WorkQueues {
 public:
  explicit WorkQueues(int n_threads) : n_(n_threads) {
    RIDGE_CHECK(n_threads >= 1);
    if (n_threads > kInline) {
      heap_ = std::make_unique<Slot[]>(static_cast<size_t>(n_threads));
      slots_ = heap_.get();
    }
  }
  WorkQueues(const WorkQueues&) = delete;
  WorkQueues& operator=(const WorkQueues&) = delete;

  // Before the region: thread ith owns units [0, n_units) of its own numbering.
  void set(int ith, int64_t n_units) {
    RIDGE_CHECK(ith >= 0 && ith < n_ && n_units >= 0 && n_units < (int64_t{1} << 31));
    slots_[ith].state.store(pack(0, static_cast<uint32_t>(n_units)), std::memory_order_relaxed);
  }

  // In the region, on thread ith: calls fn(owner, u0, u1) for chunks of units until every queue
  // is empty. Each unit of each owner is passed to exactly one call on one thread.
  template <class Fn>
  void drain(int ith, Fn&& fn) {
    std::atomic<uint64_t>& mine = slots_[ith].state;
    for (;;) {  // own queue, from the front, a quarter of what is left at a time
      uint64_t s = mine.load(std::memory_order_acquire);
      const uint32_t f = front(s), b = back(s);
      if (f >= b) break;
      const uint32_t k = std::max<uint32_t>(1, (b - f) / kOwnDivisor);
      if (mine.compare_exchange_weak(s, pack(f + k, b), std::memory_order_acq_rel)) fn(ith, f, f + k);
    }
    for (;;) {  // the back half of the fullest other queue
      int victim = -1;
      uint64_t vs = 0;
      uint32_t most = 0;
      for (int v = 0; v < n_; ++v) {
        if (v == ith) continue;
        const uint64_t s = slots_[v].state.load(std::memory_order_acquire);
        if (back(s) > front(s) && back(s) - front(s) > most) {
          most = back(s) - front(s);
          victim = v;
          vs = s;
        }
      }
      if (victim < 0) return;
      const uint32_t f = front(vs), b = back(vs);
      const uint32_t k = std::max<uint32_t>(1, (b - f) / 2);
      if (slots_[victim].state.compare_exchange_strong(vs, pack(f, b - k), std::memory_order_acq_rel)) {
        fn(victim, b - k, b);
      }
    }
  }

 private:
  static constexpr int kInline = 8;
  static constexpr uint32_t kOwnDivisor = 4;
  struct alignas(64) Slot {
    std::atomic<uint64_t> state{0};  // low 32 bits: the owner's next unit; high 32: the end
  };
  static uint64_t pack(uint32_t f, uint32_t b) { return (uint64_t{b} << 32) | f; }
  static uint32_t front(uint64_t s) { return static_cast<uint32_t>(s); }
  static uint32_t back(uint64_t s) { return static_cast<uint32_t>(s >> 32); }

  int n_;
  Slot inline_[kInline];
  std::unique_ptr<Slot[]> heap_;
  Slot* slots_ = inline_;
};

}  // namespace ridge
