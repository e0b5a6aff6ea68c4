// The gated delta rule (delta_net.h's delta_rule_sequential) in the vector lanes of a
// vector-math type M (x86_avx2/vec8.h, x86_avx512/vec16.h): the same updates row by row of each
// head's state, each dot product summed in lanes then by M::hsum's fixed tree (not the scalar
// order, so a few ulps from the reference; the same bits for a sequence alone or batched, since
// every (sequence, head) runs this same code). Include only from a file compiled for that ISA.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cpu/delta_net.h"

namespace ridge::backend::cpu {
namespace {

template <typename M>
void delta_rule_lanes(const DeltaNetShape& s, int64_t n, const float* q, const float* k,
                      const float* v, const float* g, const float* beta, float* state, float* out,
                      float out_scale, IndexRange heads) {
  using Reg = typename M::Reg;
  constexpr int64_t L = M::kLanes;
  constexpr int64_t R = 4;  // rows per group: their dot products reduce together
  const int64_t dk = s.dk, dv = s.dv, hk = s.n_k_heads, hv = s.n_v_heads;
  const int64_t vec_end = dk / L * L;
  const int64_t j_end = heads.end < 0 ? hv : heads.end;
  for (int64_t j = heads.begin; j < j_end; ++j) {
    float* S = state + j * dv * dk;
    for (int64_t t = 0; t < n; ++t) {
      const float* kt = k + (t * hk + j % hk) * dk;
      const float* qt = q + (t * hk + j % hk) * dk;
      const float* vt = v + (t * hv + j) * dv;
      float* o = out + (t * hv + j) * dv;
      const float decay = std::exp(g[t * hv + j]);
      const float b = beta[t * hv + j];
      const Reg dec = M::set1(decay);
      for (int64_t a = 0; a < dv; a += R) {
        const int64_t rows = std::min(R, dv - a);
        // Decay, then S k.
        Reg acc[R];
        for (int64_t r = 0; r < rows; ++r) {
          float* row = S + (a + r) * dk;
          acc[r] = M::zero();
          for (int64_t c = 0; c < vec_end; c += L) {
            const Reg x = M::mul(M::loadu(row + c), dec);
            M::storeu(row + c, x);
            acc[r] = M::fmadd(x, M::loadu(kt + c), acc[r]);
          }
        }
        float sk[R];
        for (int64_t r = 0; r < rows; ++r) {
          float* row = S + (a + r) * dk;
          sk[r] = M::hsum(acc[r]);
          for (int64_t c = vec_end; c < dk; ++c) {
            row[c] *= decay;
            sk[r] += row[c] * kt[c];
          }
        }
        // The rank-1 update u k^T, then S q.
        for (int64_t r = 0; r < rows; ++r) {
          float* row = S + (a + r) * dk;
          const float u = (vt[a + r] - sk[r]) * b;
          const Reg uu = M::set1(u);
          Reg so = M::zero();
          for (int64_t c = 0; c < vec_end; c += L) {
            const Reg x = M::fmadd(uu, M::loadu(kt + c), M::loadu(row + c));
            M::storeu(row + c, x);
            so = M::fmadd(x, M::loadu(qt + c), so);
          }
          float sum = M::hsum(so);
          for (int64_t c = vec_end; c < dk; ++c) {
            row[c] += u * kt[c];
            sum += row[c] * qt[c];
          }
          o[a + r] = sum * out_scale;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ridge::backend::cpu
