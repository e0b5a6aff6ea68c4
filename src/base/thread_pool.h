// Persistent worker pool: threads are created once and reused for every op of every step.
// One parallel region per op; the calling thread takes part as worker 0.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "base/function_ref.h"

namespace ridge {

class ThreadPool {
 public:
  // n_threads >= 1 (including the caller). With `pin`, worker i (i >= 1) is pinned to CPU i;
  // worker 0 is the calling thread, whose affinity is left alone.
  explicit ThreadPool(int n_threads, bool pin = false);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;
  // Runs fn(thread_index, n_threads) once on each of the n threads and returns when all finish.
  // Not reentrant: fn must not call run() on the same pool. Takes a reference, not a
  // std::function: a decode step runs ~140 regions, and none should allocate.
  void run(FunctionRef<void(int ith, int nth)> fn);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs fn(i) for i in [0, n) on n short-lived threads, the caller being i = 0, and returns when
// all finish: one-off parallel work outside a pool (loading a model, writing one).
void run_on_threads(int n, const std::function<void(int i)>& fn);

// The [begin, end) share of `n` items for thread `ith` of `nth`, in contiguous chunks that are
// multiples of `grain` (except the last).
struct Range {
  int64_t begin;
  int64_t end;
};
Range split_range(int64_t n, int ith, int nth, int64_t grain = 1);

}  // namespace ridge
