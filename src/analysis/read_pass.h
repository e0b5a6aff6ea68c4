// A read of a buffer far larger than the last-level cache with `ridge probe`'s loops, run on the
// caller's thread pool between other work: the read bandwidth of this moment. `ridge bench
// --paired-probe` runs one after every timed decode step and judges the step against it, because
// on a shared VM the bandwidth drifts by 1.5x within minutes and a probe measured earlier (or
// between two runs) judges a run against another machine state.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/probe_kernels.h"
#include "analysis/probe_loops.h"
#include "base/huge_pages.h"
#include "base/status.h"
#include "base/thread_pool.h"

namespace ridge::analysis {

class ReadPass {
 public:
  static constexpr uint64_t kDefaultBytes = uint64_t{256} << 20;

  // Allocates `bytes` (rounded down to whole loop steps of every thread; huge pages where the
  // kernel gives them), touches it on `pool`, then times each of the probe's read variants
  // `calibration_passes` times round robin and keeps the one with the best median, as the probe
  // does. `isa` forces the loops ("" = best).
  static Result<ReadPass> create(ThreadPool& pool, uint64_t bytes = kDefaultBytes,
                                 int calibration_passes = 5, const std::string& isa = "");

  // One pass of the chosen variant over the whole buffer on every thread of `pool`: bytes per
  // second, from the first thread's start to the last one's end.
  double run(ThreadPool& pool);

  const std::string& loop_name() const { return loop_name_; }
  uint64_t bytes() const { return bytes_; }
  // The sum of what the last pass read: the buffer holds ones, so this is the number of floats
  // read (exact: each thread's share is far below 2^24 per accumulator).
  double last_sum() const { return last_sum_; }

 private:
  double run_variant(ThreadPool& pool, const probe_kernels::MemLoop& loop);

  ProbeLoops loops_;
  HugeBuffer buf_;
  uint64_t bytes_ = 0;
  probe_kernels::MemLoop loop_;
  std::string loop_name_;
  double last_sum_ = 0;
};

}  // namespace ridge::analysis
