// SwiGLU and SiLU in 8 AVX2 lanes with the polynomial e^x of backend/cpu/simd_math.h.
#include "model/ops.h"
#include "backend/cpu/simd_math.h"
#include "backend/cpu/x86_avx2/vec8.h"

namespace ridge::backend::cpu {

void swiglu_avx2(const float* gate, const float* up, float* out, int64_t n) {
  swiglu_lanes<Vec8>(gate, up, out, n);
}

void silu_inplace_avx2(float* x, int64_t n) { silu_lanes<Vec8>(x, n); }

}  // namespace ridge::backend::cpu
