// SwiGLU and SiLU in 8 AVX2 lanes with the polynomial e^x of model/simd_math.h.
#include "model/ops.h"
#include "model/simd_math.h"
#include "model/x86_avx2/vec8.h"

namespace ridge::model {

void swiglu_avx2(const float* gate, const float* up, float* out, int64_t n) {
  swiglu_lanes<Vec8>(gate, up, out, n);
}

void silu_inplace_avx2(float* x, int64_t n) { silu_lanes<Vec8>(x, n); }

}  // namespace ridge::model
