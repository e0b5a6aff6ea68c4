// Portable probe loops for CPUs without AVX2 (baseline x86-64 flags).
#include <cstring>

#include "analysis/probe_kernels.h"

namespace ridge::analysis::probe_kernels::generic {

// One stream (the variants' streams only matter to the vector loops); optional prefetch.
float read_sum(const float* p, size_t n, const MemLoop& loop) {
  float s[8] = {};
  const size_t ahead = loop.prefetch_bytes / sizeof(float);
  for (size_t i = 0; i < n; i += 16) {
    if (ahead > 0) __builtin_prefetch(p + i + ahead, 0, 2);  // read, into L2
    for (size_t j = 0; j < 8; ++j) s[j] += p[i + j] + p[i + 8 + j];
  }
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

void copy(float* dst, const float* src, size_t n, const MemLoop& /*loop*/) {
  std::memcpy(dst, src, n * sizeof(float));
}

}  // namespace ridge::analysis::probe_kernels::generic
