#include "kernels/quant/quant_search.h"

#include <cmath>
#include <cstring>

#include "base/check.h"

namespace ridge::kernels::qsearch {
namespace {

// Same rounding as round_clamp, kept in float so the candidate loops vectorize.
inline float round_clamp_f(float v, float lo, float hi) {
  v = v > lo ? v : lo;
  v = v < hi ? v : hi;
  return (v + 12582912.0f) - 12582912.0f;
}

constexpr float kTiny = 1e-30f;

// Offsets (in quantization steps) of the candidate positions of the extreme value.
constexpr float kSymDeltas[] = {-1.0f, -0.75f, -0.5f, -0.25f, 0.0f, 0.25f, 0.5f};
constexpr float kAffDeltas[] = {-1.0f, -0.8f, -0.6f, -0.4f, -0.2f, 0.0f,
                                0.2f,  0.4f,  0.6f,  0.8f,  1.0f};

struct SymSums {
  float sxq = 0.0f;
  float sqq = 0.0f;
};

// The candidate loops are the quantizers' hot spot. They use GCC/Clang vector extensions
// (portable to every target, unlike intrinsics): float sums are not reassociated by the
// compiler, so without explicit vectors it emits scalar or badly shuffled code.
typedef float V4 __attribute__((vector_size(16)));

inline V4 splat(float f) { return V4{f, f, f, f}; }
inline V4 load4(const float* p) {
  V4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline float hsum(V4 v) { return (v[0] + v[1]) + (v[2] + v[3]); }
inline V4 round_clamp_v(V4 v, V4 lo, V4 hi) {
  v = v > lo ? v : lo;
  v = v < hi ? v : hi;
  const V4 magic = splat(12582912.0f);
  return (v + magic) - magic;
}

// kW: every term times its weight w[i] (an all-one w gives the unweighted bits: w * t == t).
template <int kN, bool kW>
SymSums sym_sums(const float* x, const float* w, float iscale, float lo, float hi) {
  V4 sxq{}, sqq{};
  for (int i = 0; i < kN; i += 4) {
    const V4 xv = load4(x + i);
    const V4 q = round_clamp_v(xv * splat(iscale), splat(lo), splat(hi));
    if constexpr (kW) {
      const V4 wv = load4(w + i);
      sxq += wv * (xv * q);
      sqq += wv * (q * q);
    } else {
      sxq += xv * q;
      sqq += q * q;
    }
  }
  return SymSums{hsum(sxq), hsum(sqq)};
}

SymSums sym_sums(int n, const float* x, const float* w, float iscale, float lo, float hi) {
  if (w != nullptr) return n == 16 ? sym_sums<16, true>(x, w, iscale, lo, hi) : sym_sums<32, true>(x, w, iscale, lo, hi);
  return n == 16 ? sym_sums<16, false>(x, w, iscale, lo, hi) : sym_sums<32, false>(x, w, iscale, lo, hi);
}

struct AffSums {
  float sq = 0.0f;
  float sqq = 0.0f;
  float sxq = 0.0f;
};

template <int kN, bool kW>
AffSums aff_sums(const float* x, const float* w, float iscale, float origin, float q_max) {
  V4 sq{}, sqq{}, sxq{};
  for (int i = 0; i < kN; i += 4) {
    const V4 xv = load4(x + i);
    const V4 q = round_clamp_v((xv - splat(origin)) * splat(iscale), splat(0.0f), splat(q_max));
    if constexpr (kW) {
      const V4 wv = load4(w + i);
      sq += wv * q;
      sqq += wv * (q * q);
      sxq += wv * (xv * q);
    } else {
      sq += q;
      sqq += q * q;
      sxq += xv * q;
    }
  }
  return AffSums{hsum(sq), hsum(sqq), hsum(sxq)};
}

AffSums aff_sums(int n, const float* x, const float* w, float iscale, float origin, float q_max) {
  if (w != nullptr) return n == 16 ? aff_sums<16, true>(x, w, iscale, origin, q_max) : aff_sums<32, true>(x, w, iscale, origin, q_max);
  return n == 16 ? aff_sums<16, false>(x, w, iscale, origin, q_max) : aff_sums<32, false>(x, w, iscale, origin, q_max);
}

// Least-squares (scale, offset) for given sums, and its squared error minus sum(x^2).
Affine solve_affine(const AffSums& s, float n, float sx, bool offset_le_zero, float* err) {
  Affine a{0.0f, sx / n};
  const float det = n * s.sqq - s.sq * s.sq;
  if (det > kTiny) {
    a.scale = (n * s.sxq - s.sq * sx) / det;
    a.offset = (s.sqq * sx - s.sq * s.sxq) / det;
  }
  if (offset_le_zero && a.offset > 0.0f) {
    a.offset = 0.0f;
    a.scale = s.sqq > kTiny ? s.sxq / s.sqq : 0.0f;
  }
  if (a.scale < 0.0f) {  // only for degenerate groups: fall back to the constant fit
    a.scale = 0.0f;
    a.offset = offset_le_zero && sx > 0.0f ? 0.0f : sx / n;
  }
  *err = a.scale * a.scale * s.sqq + 2.0f * a.scale * a.offset * s.sq + a.offset * a.offset * n -
         2.0f * a.scale * s.sxq - 2.0f * a.offset * sx;
  return a;
}

}  // namespace

float fit_symmetric(const float* x, int n, int n_neg, int n_pos, const float* w) {
  RIDGE_CHECK(n == 16 || n == 32);
  float amax = 0.0f;
  float vmax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      vmax = x[i];
    }
  }
  if (!(amax > kTiny)) return 0.0f;
  const float lo = static_cast<float>(-n_neg);
  const float hi = static_cast<float>(n_pos);
  // Maximizing sxq^2 / sqq minimizes the error sum(x^2) - sxq^2 / sqq of the fitted scale.
  float best_num = 0.0f;
  float best_den = 1.0f;
  float best_scale = 0.0f;
  auto consider = [&](float iscale) {
    const SymSums s = sym_sums(n, x, w, iscale, lo, hi);
    if (s.sqq > 0.0f && s.sxq * s.sxq * best_den > best_num * s.sqq) {
      best_num = s.sxq * s.sxq;
      best_den = s.sqq;
      best_scale = s.sxq / s.sqq;
    }
  };
  for (float delta : kSymDeltas) {
    consider(-(static_cast<float>(n_neg) + delta) / vmax);  // extreme value near -n_neg
    if (n_pos != n_neg) consider((static_cast<float>(n_pos) + delta) / vmax);
  }
  for (int iter = 0; iter < 2 && best_scale != 0.0f; ++iter) consider(1.0f / best_scale);
  return best_scale;
}

Affine fit_affine(const float* x, int n, int q_max, bool offset_le_zero, const float* w) {
  RIDGE_CHECK(n == 16 || n == 32);
  float mn = x[0];
  float mx = x[0];
  float sx = 0.0f;  // with weights: sum w x
  float sw = 0.0f;
  for (int i = 0; i < n; ++i) {
    mn = x[i] < mn ? x[i] : mn;
    mx = x[i] > mx ? x[i] : mx;
    sx += w != nullptr ? w[i] * x[i] : x[i];
    sw += w != nullptr ? w[i] : 0.0f;
  }
  if (offset_le_zero && mn > 0.0f) mn = 0.0f;
  const float fn = w != nullptr ? sw : static_cast<float>(n);
  if (!(mx - mn > kTiny)) return Affine{0.0f, mn};  // constant group
  const float qm = static_cast<float>(q_max);
  Affine best{(mx - mn) / qm, mn};
  float best_err = INFINITY;
  auto consider = [&](float iscale, float origin) {
    float err;
    const AffSums sums = aff_sums(n, x, w, iscale, origin, qm);
    const Affine a = solve_affine(sums, fn, sx, offset_le_zero, &err);
    if (err < best_err) {
      best_err = err;
      best = a;
    }
  };
  for (float delta : kAffDeltas) consider((qm + delta) / (mx - mn), mn);
  for (int iter = 0; iter < 2 && best.scale > kTiny; ++iter) consider(1.0f / best.scale, best.offset);
  return best;
}

void quantize_symmetric(const float* x, int n, float scale, int n_neg, int n_pos, int8_t* q) {
  const float iscale = scale != 0.0f ? 1.0f / scale : 0.0f;
  for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(round_clamp(x[i] * iscale, -n_neg, n_pos));
}

void quantize_affine(const float* x, int n, float scale, float offset, int q_max, uint8_t* q) {
  const float iscale = scale != 0.0f ? 1.0f / scale : 0.0f;
  for (int i = 0; i < n; ++i) {
    q[i] = static_cast<uint8_t>(round_clamp((x[i] - offset) * iscale, 0, q_max));
  }
}

}  // namespace ridge::kernels::qsearch
