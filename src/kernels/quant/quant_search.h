// Scale search shared by the quantizers (internal to kernels/quant).
//
// Every block format approximates a group of values x by s * q (symmetric) or s * q + o (affine)
// with integer q in a fixed range. The search tries a handful of candidate inverse scales around
// "the extreme value maps to the end of the range", rounds x with each, solves the least-squares
// (s, o) for those q in closed form, keeps the candidate with the smallest squared error, and
// refines the winner by re-rounding once. Plain squared error (it directly minimizes the RMSE
// that docs/quantization.md reports), or with weights w (an importance matrix's per-column mean
// squared activation: the expected squared error of the layer's output) sum w_i (x_i - x^_i)^2.
// w == nullptr is the plain search, bit for bit; all-one weights give the same bits too.
#pragma once

#include <cstdint>

namespace ridge::kernels::qsearch {

// Round v to the nearest integer (ties to even) and clamp to [lo, hi]; NaN gives lo.
inline int round_clamp(float v, int lo, int hi) {
  v = v > static_cast<float>(lo) ? v : static_cast<float>(lo);
  v = v < static_cast<float>(hi) ? v : static_cast<float>(hi);
  return static_cast<int>((v + 12582912.0f) - 12582912.0f);
}

// Group sizes n are 16 or 32 (all the formats use; CHECKed).
// x[i] ~ scale * q[i] with q in [-n_neg, n_pos]. Returns the scale (0 for an all-zero group).
float fit_symmetric(const float* x, int n, int n_neg, int n_pos, const float* w = nullptr);

struct Affine {
  float scale;
  float offset;
};
// x[i] ~ scale * q[i] + offset with q in [0, q_max]; with `offset_le_zero` the offset is
// constrained to <= 0 (K formats store it as a subtracted unsigned min). scale >= 0.
Affine fit_affine(const float* x, int n, int q_max, bool offset_le_zero, const float* w = nullptr);

// Rounds with a fixed (already stored) scale: q[i] = round(x[i] / scale) clamped.
void quantize_symmetric(const float* x, int n, float scale, int n_neg, int n_pos, int8_t* q);
// q[i] = round((x[i] - offset) / scale) clamped to [0, q_max].
void quantize_affine(const float* x, int n, float scale, float offset, int q_max, uint8_t* q);

}  // namespace ridge::kernels::qsearch
