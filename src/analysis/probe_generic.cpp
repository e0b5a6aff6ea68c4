// Portable probe loops for CPUs without AVX2 (baseline x86-64 flags).
#include <cstring>

#include "analysis/probe_kernels.h"

namespace ridge::analysis::probe_kernels::generic {

float read_sum(const float* p, size_t n) {
  float s[8] = {};
  for (size_t i = 0; i < n; i += 8) {
    for (size_t j = 0; j < 8; ++j) s[j] += p[i + j];
  }
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

void copy(float* dst, const float* src, size_t n) { std::memcpy(dst, src, n * sizeof(float)); }

}  // namespace ridge::analysis::probe_kernels::generic
