// Per-row work of the forward pass (norms, residual adds, gathers), split over the thread pool
// only when it is large enough to pay for waking it.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace ridge::backend::cpu {

// Below this many elements an element-wise op runs on the calling thread: waking the pool
// costs more than the work (decode of one token).
inline constexpr int64_t kParallelElems = 1 << 15;

// fn(row) for rows [0, n_rows), split over the pool when the work is large enough.
template <typename Fn>
void for_rows(ThreadPool& pool, int64_t n_rows, int64_t row_elems, const Fn& fn) {
  if (pool.size() == 1 || n_rows < 2 || n_rows * row_elems < kParallelElems) {
    for (int64_t r = 0; r < n_rows; ++r) fn(r);
    return;
  }
  pool.run([&](int ith, int nth) {
    const Range range = split_range(n_rows, ith, nth);
    for (int64_t r = range.begin; r < range.end; ++r) fn(r);
  });
}

}  // namespace ridge::backend::cpu
