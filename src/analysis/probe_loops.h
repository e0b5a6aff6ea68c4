// The probe's loops of one ISA and the memory-loop variants it times: shared by `ridge probe`
// (probe.cpp) and the read pass that `ridge bench --paired-probe` runs between decode steps
// (read_pass.cpp). Internal to analysis/.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "analysis/probe_kernels.h"
#include "base/status.h"

namespace ridge::analysis {

// The loops of one ISA; compute loops are null where the instruction is absent.
struct ProbeLoops {
  std::string name;  // "avx512", "avx2" or "generic"
  float (*read)(const float*, size_t, const probe_kernels::MemLoop&) = nullptr;
  void (*copy)(float*, const float*, size_t, const probe_kernels::MemLoop&) = nullptr;
  float (*fma)(int64_t) = nullptr;
  double fma_flops = 0;
  int32_t (*int8)(int64_t) = nullptr;
  double int8_ops = 0;
  float (*bf16)(int64_t) = nullptr;
  double bf16_flops = 0;
};

// The best loops this CPU runs, or those of `forced` ("avx512", "avx2", "generic"; a usage error
// when the CPU lacks them).
Result<ProbeLoops> select_probe_loops(const std::string& forced);

// The read and copy variants the probe times (the best median wins).
std::span<const probe_kernels::MemLoop> probe_read_variants();
std::span<const probe_kernels::MemLoop> probe_copy_variants();

// "4 streams + prefetch 2 KiB", "streaming stores", ...
std::string probe_loop_name(const probe_kernels::MemLoop& l, bool copy);

}  // namespace ridge::analysis
