// The gated delta rule in AVX512 lanes (backend/cpu/delta_rule_simd.h).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "backend/cpu/delta_rule_simd.h"
#include "backend/cpu/x86_avx512/vec16.h"

namespace ridge::backend::cpu {

void delta_rule_avx512(const DeltaNetShape& s, int64_t n, const float* q, const float* k, const float* v,
                       const float* g, const float* beta, float* state, float* out, float out_scale,
                       IndexRange heads) {
  delta_rule_lanes<Vec16>(s, n, q, k, v, g, beta, state, out, out_scale, heads);
}

}  // namespace ridge::backend::cpu
