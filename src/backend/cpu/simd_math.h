// e^x, SiLU, SwiGLU and softmax written once over a vector-math type M that each ISA directory
// defines (x86_avx2/vec8.h: 8 lanes, x86_avx512/vec16.h: 16). M provides
//   using Reg; kLanes; zero(), set1(x), loadu(p), storeu(p, r), add, sub, mul, div, max, fmadd(a,
//   b, c) = a b + c, fnmadd(a, b, c) = c - a b, abs, round_even, scale_pow2(p, n) = p 2^n (n
//   integral, >= -150; one rounding), select_neg(g, a, b) = g < 0 ? a : b per lane,
//   first_lanes(r, k) (lanes >= k zeroed), hsum(r) and hmax(r) (fixed reduction trees).
// Include only from a file compiled for that ISA: internal linkage, no cross-ISA copy is linked.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ridge::backend::cpu {
namespace {

// e^x for x <= 0: 2^n e^r with n = round(x / ln 2), |r| <= ln 2 / 2 (ln 2 split in two for an
// exact n ln 2), e^r by its degree-7 Taylor polynomial (relative error < 1e-8 before rounding).
template <typename M>
inline typename M::Reg exp_nonpos(typename M::Reg x) {
  x = M::max(x, M::set1(-104.0f));  // below: 0 after scaling
  const typename M::Reg n = M::round_even(M::mul(x, M::set1(1.44269504088896341f)));
  typename M::Reg r = M::fnmadd(n, M::set1(0.693145751953125f), x);
  r = M::fnmadd(n, M::set1(1.428606765330187045e-06f), r);
  typename M::Reg p = M::set1(1.0f / 5040.0f);
  for (float c : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f}) {
    p = M::fmadd(p, r, M::set1(c));
  }
  return M::scale_pow2(p, n);
}

// silu(g) = g sigmoid(g) with e = e^-|g| <= 1, so nothing overflows: sigmoid(g) = 1 / (1 + e)
// for g >= 0 and e / (1 + e) below.
template <typename M>
inline typename M::Reg silu(typename M::Reg g) {
  const typename M::Reg e = exp_nonpos<M>(M::sub(M::zero(), M::abs(g)));
  const typename M::Reg one = M::set1(1.0f);
  return M::mul(g, M::div(M::select_neg(g, e, one), M::add(one, e)));
}

// out = silu(gate) * up (out may alias gate); the tail through a zero-padded copy.
template <typename M>
void swiglu_lanes(const float* gate, const float* up, float* out, int64_t n) {
  constexpr int kL = M::kLanes;
  int64_t i = 0;
  for (; i + kL <= n; i += kL) M::storeu(out + i, M::mul(silu<M>(M::loadu(gate + i)), M::loadu(up + i)));
  if (i < n) {
    float g[kL] = {}, u[kL] = {}, o[kL];
    std::copy(gate + i, gate + n, g);
    std::copy(up + i, up + n, u);
    M::storeu(o, M::mul(silu<M>(M::loadu(g)), M::loadu(u)));
    std::copy(o, o + (n - i), out + i);
  }
}

// x = silu(x) in place; the tail through a zero-padded copy.
template <typename M>
void silu_lanes(float* x, int64_t n) {
  constexpr int kL = M::kLanes;
  int64_t i = 0;
  for (; i + kL <= n; i += kL) M::storeu(x + i, silu<M>(M::loadu(x + i)));
  if (i < n) {
    float g[kL] = {};
    std::copy(x + i, x + n, g);
    M::storeu(g, silu<M>(M::loadu(g)));
    std::copy(g, g + (n - i), x + i);
  }
}

// Softmax over n >= 1 values in place; the tail through a padded copy, the sums in a fixed order.
template <typename M>
void softmax_lanes(float* x, int64_t n) {
  constexpr int kL = M::kLanes;
  const int64_t body = n / kL * kL;
  const auto rest = static_cast<int>(n - body);
  float tail[kL];
  for (int k = 0; k < kL; ++k) tail[k] = k < rest ? x[body + k] : -INFINITY;
  typename M::Reg mx = M::loadu(tail);
  for (int64_t i = 0; i < body; i += kL) mx = M::max(mx, M::loadu(x + i));
  const typename M::Reg m = M::set1(M::hmax(mx));
  typename M::Reg sum = M::zero();
  for (int64_t i = 0; i < body; i += kL) {
    const typename M::Reg e = exp_nonpos<M>(M::sub(M::loadu(x + i), m));
    M::storeu(x + i, e);
    sum = M::add(sum, e);
  }
  typename M::Reg e_tail = M::zero();
  if (rest != 0) {
    e_tail = M::first_lanes(exp_nonpos<M>(M::sub(M::loadu(tail), m)), rest);
    sum = M::add(sum, e_tail);
  }
  const typename M::Reg inv = M::set1(1.0f / M::hsum(sum));
  for (int64_t i = 0; i < body; i += kL) M::storeu(x + i, M::mul(M::loadu(x + i), inv));
  if (rest != 0) {
    M::storeu(tail, M::mul(e_tail, inv));
    std::copy(tail, tail + rest, x + body);
  }
}

}  // namespace
}  // namespace ridge::backend::cpu
