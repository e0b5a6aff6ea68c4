// The GPU's memory bandwidth, measured as the CPU's probe measures the host's (analysis/probe.h):
// a read pass over a buffer far larger than the L2 (each thread 16-byte loads, grid-stride, one
// sum per block kept so nothing is skipped) and a device-to-device copy (bytes read plus bytes
// written), each timed with events, the median of `reps` passes after a warm-up.
// A plain launch header (bandwidth.cu).
#pragma once

#include <cstdint>

namespace ridge::backend::cuda {

struct BandwidthTimes {
  double read_ms = 0;  // median of the read passes over `bytes`
  double copy_ms = 0;  // median of the copies of bytes / 2 into the other half
  int error = 0;       // a cudaError_t (0: success)
};

// On the current device, through a buffer of `bytes` (allocated and freed here).
BandwidthTimes time_bandwidth(uint64_t bytes, int reps);

}  // namespace ridge::backend::cuda
