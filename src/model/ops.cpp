#include "model/ops.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/llama3_rope.h"

namespace ridge::model {

float dot_f32(const float* x, const float* y, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += x[i + j] * y[i + j];
  }
  for (int j = 0; i < n; ++i, ++j) acc[j] += x[i] * y[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  // The sum of squares as llama.cpp forms it: f32 products added in double, the mean rounded to
  // f32 (a float sum moves the scale by an ulp now and then, which the f16/bf16/q8_0 rounding of
  // the next matmul's input or the f16 KV cache can turn into a visible difference: tiny-qwen3
  // f32, whose per-head Q/K norms feed the cache, 5.7e-5 -> 3.8e-6 against llama.cpp). llama.cpp
  // adds them in order; here kChains interleaved chains are folded by a fixed tree, which is
  // ~5x faster (one chain is one dependent double add per element: ~0.8 us per 1024-wide norm,
  // and a Qwen3 decode step runs 26 norms per layer on the calling thread while the pool waits)
  // and rounds differently from the ordered sum by ~1e-13 relative: the f32 mean matched it in
  // 800,000 random rows of 128-4096 elements (normal and heavy-tailed).
  constexpr int kChains = 8;
  double acc[kChains] = {};
  int64_t i = 0;
  for (; i + kChains <= n; i += kChains) {
    for (int c = 0; c < kChains; ++c) acc[c] += static_cast<double>(x[i + c] * x[i + c]);
  }
  for (int c = 0; i < n; ++i, ++c) acc[c] += static_cast<double>(x[i] * x[i]);
  const double ss = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  const auto mean = static_cast<float>(ss / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  if (w == nullptr) {
    for (int64_t k = 0; k < n; ++k) y[k] = x[k] * scale;
    return;
  }
  for (int64_t k = 0; k < n; ++k) y[k] = x[k] * scale * w[k];
}

void add_inplace(float* x, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += b[i];
}

void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dims, const float* cs,
          const float* sn, RopeLayout layout) {
  const int64_t half = rope_dims / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    if (layout == RopeLayout::kNormal) {
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[2 * i], b = v[2 * i + 1];
        v[2 * i] = a * cs[i] - b * sn[i];
        v[2 * i + 1] = a * sn[i] + b * cs[i];
      }
    } else {
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * cs[i] - b * sn[i];
        v[i + half] = a * sn[i] + b * cs[i];
      }
    }
  }
}

void rope_freq_factors(const ModelConfig& cfg, const float* freq_factors, float* factors) {
  const int64_t half = cfg.rope_dims / 2;
  const RopeScaling& s = cfg.rope_scaling;
  for (int64_t i = 0; i < half; ++i) {
    double factor = 1.0;
    if (freq_factors != nullptr) {
      factor = freq_factors[i];
    } else if (s.factor > 0.0f) {  // Llama 3: scale only the long wavelengths, blend in between
      factor = llama3_rope_factor(static_cast<double>(cfg.rope_theta), cfg.rope_dims, i, s.factor,
                                  s.low_freq_factor, s.high_freq_factor, s.original_context);
    }
    factors[i] = static_cast<float>(factor);
  }
}

YarnParams yarn_params(const ModelConfig& cfg) {
  YarnParams p;
  const YarnScaling& y = cfg.yarn;
  if (!(y.factor > 0.0f)) return p;
  p.on = true;
  // The correction range: the dimensions whose wavelength turns between beta_fast and beta_slow
  // times over the original context (ggml_rope_yarn_corr_dims).
  const auto dims = static_cast<float>(cfg.rope_dims);
  const auto ctx = static_cast<float>(y.original_context);
  auto corr_dim = [&](float rotations) {
    return dims * std::log(ctx / (rotations * 2.0f * std::numbers::pi_v<float>)) /
           (2.0f * std::log(cfg.rope_theta));
  };
  p.low = std::max(0.0f, std::floor(corr_dim(y.beta_fast)));
  p.high = std::min(dims - 1.0f, std::ceil(corr_dim(y.beta_slow)));
  // llama.cpp's attention factor: get_mscale(factor, 1) (or its ratio with the log multiplier's),
  // divided by the 1 + 0.1 ln(factor) that ggml's rope multiplies back in, times attn_factor.
  auto get_mscale = [](float scale, float m) {
    return scale <= 1.0f ? 1.0f : 0.1f * m * std::log(scale) + 1.0f;
  };
  const float factor = 1.0f / cfg.rope_freq_scale;
  float attn = y.log_multiplier != 0.0f
                   ? get_mscale(factor, 1.0f) / get_mscale(factor, y.log_multiplier)
                   : get_mscale(factor, 1.0f);
  attn *= 1.0f / (1.0f + 0.1f * std::log(factor));
  attn *= y.attn_factor;
  p.mscale = attn * (1.0f + 0.1f * std::log(1.0f / cfg.rope_freq_scale));
  return p;
}

void rope_cos_sin(int64_t rope_dims, float theta_base, float freq_scale, const float* factors,
                  const YarnParams& yarn, int64_t pos, float* cs, float* sn) {
  const float step = std::pow(theta_base, -2.0f / static_cast<float>(rope_dims));
  float theta = static_cast<float>(pos);
  for (int64_t i = 0; i < rope_dims / 2; ++i) {
    const float extrap = theta / factors[i];
    float angle = freq_scale * extrap;
    float mscale = 1.0f;
    if (yarn.on) {
      // Interpolated below the correction range, extrapolated (unscaled) above it, blended in it.
      const float y = (static_cast<float>(i) - yarn.low) / std::max(0.001f, yarn.high - yarn.low);
      const float mix = 1.0f - std::min(1.0f, std::max(0.0f, y));
      angle = angle * (1.0f - mix) + extrap * mix;
      mscale = yarn.mscale;
    }
    cs[i] = std::cos(angle) * mscale;
    sn[i] = std::sin(angle) * mscale;
    theta *= step;
  }
}

void softmax(float* x, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void softmax_with_sink(float* x, int64_t n, float sink) {
  float mx = sink;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  double sum = std::exp(static_cast<double>(sink - mx));
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const auto inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace ridge::model
