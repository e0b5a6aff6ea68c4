#include "sampling/argmax.h"

#include <cstddef>
#include <cstring>

namespace ridge::sampling {
namespace {

// Four 4-float vectors (GCC/Clang vector extensions: SSE on any x86-64, wider where compiled so).
typedef float F32x4 __attribute__((vector_size(16)));
typedef int I32x4 __attribute__((vector_size(16)));
constexpr size_t kBlock = 16;

inline F32x4 load4(const float* p) {
  F32x4 r;
  std::memcpy(&r, p, sizeof(r));
  return r;
}

}  // namespace

int32_t argmax(std::span<const float> v) {
  const size_t n = v.size();
  if (n == 0) return 0;
  const float* p = v.data();
  // Pass 1: the maximum, 16 lanes at a time (`x > m ? x : m`: a NaN x keeps m, as in the scan).
  F32x4 m[4];
  for (F32x4& r : m) r = F32x4{p[0], p[0], p[0], p[0]};
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t k = 0; k < 4; ++k) {
      const F32x4 x = load4(p + i + 4 * k);
      m[k] = x > m[k] ? x : m[k];
    }
  }
  float best = p[0];
  for (const F32x4& r : m) {
    for (int k = 0; k < 4; ++k) best = r[k] > best ? r[k] : best;
  }
  for (; i < n; ++i) best = p[i] > best ? p[i] : best;
  // Pass 2: its first index, a block at a time. Values that compare equal are the scan's ties
  // (+0 and -0 included). If p[0] is NaN so is best, which nothing equals: 0, as the scan gives.
  const F32x4 b{best, best, best, best};
  size_t k = 0;
  for (; k + kBlock <= n; k += kBlock) {
    I32x4 hit = (load4(p + k) == b) | (load4(p + k + 4) == b);
    hit |= (load4(p + k + 8) == b) | (load4(p + k + 12) == b);
    if ((hit[0] | hit[1] | hit[2] | hit[3]) != 0) break;
  }
  for (; k < n; ++k) {
    if (p[k] == best) return static_cast<int32_t>(k);
  }
  return 0;
}

}  // namespace ridge::sampling
