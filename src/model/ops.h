// Element-wise and per-row operations of the transformer layer (everything but the matmuls and
// attention). Plain loops with independent partial sums so the compiler vectorizes them without
// -ffast-math; each row's result depends only on that row (batch invariance).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"
#include "model/config.h"

namespace ridge::model {

// Sum of x[i] * y[i] in a fixed order (8 interleaved partial sums, then pairwise).
float dot_f32(const float* x, const float* y, int64_t n);

// y = x / sqrt(mean(x^2) + eps) * w, one row of n (y may alias x; w null: no weight).
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
// x[i] += b[i]
void add_inplace(float* x, const float* b, int64_t n);
// Rotary embedding of one token: x holds n_heads vectors of head_dim; the first rope_dims of
// each are rotated by angles whose cosines/sines are cs[0..rope_dims/2) / sn[...].
// kNormal rotates adjacent pairs (2i, 2i+1); kNeox rotates (i, i + rope_dims/2).
void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dims, const float* cs,
          const float* sn, RopeLayout layout);

// The divisors factor_i of the rotary angles, i < rope_dims/2: a rope_freqs tensor (may be
// null), else Llama 3 scaling from cfg.rope_scaling, else 1.
void rope_freq_factors(const ModelConfig& cfg, const float* freq_factors, float* factors);

// YaRN's per-model constants (cfg.yarn): the correction range [low, high] in rotary pairs and
// the magnitude scale of cos/sin, as llama.cpp derives them. on = false without YaRN.
struct YarnParams {
  bool on = false;
  float low = 0.0f, high = 0.0f;
  float mscale = 1.0f;
};
YarnParams yarn_params(const ModelConfig& cfg);

// Cosines and sines of the rotary angles of one position, cs/sn[0, rope_dims/2): angle_i =
// freq_scale * (theta_i / factor_i), theta_i = pos * s^i with s = base^(-2/rope_dims), in f32
// and built as llama.cpp builds them: theta_0 = pos, then one multiplication by s per pair.
// pow(base, -2i/d) per pair differs in the last bits, more so at later positions, which flips
// f16/bf16/q8_0 roundings downstream now and then (tiny-llama with head_dim 32, bf16: 1.2e-3 ->
// 4e-7 against llama.cpp). With YaRN, ggml's blend of interpolated and original angles and its
// magnitude scale.
// `theta` and `freq_scale`: the base and position scale of the layers the table serves
// (the model's, or cfg.swa_rope_theta / swa_rope_freq_scale).
void rope_cos_sin(int64_t rope_dims, float theta, float freq_scale, const float* factors,
                  const YarnParams& yarn, int64_t pos, float* cs, float* sn);

// Numerically stable in-place softmax of n values.
void softmax(float* x, int64_t n);
// The same with one more logit, `sink`, in the denominator only (attention sinks).
void softmax_with_sink(float* x, int64_t n, float sink);

}  // namespace ridge::model
