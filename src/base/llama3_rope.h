// Llama 3's rotary frequency scaling (config.json's rope_scaling "llama3"; llama.cpp's
// rope_freqs tensor): the divisor of rotary pair i of `dims` rotated dimensions. 1 for
// wavelengths shorter than original_context / high_freq_factor, `factor` for those longer than
// original_context / low_freq_factor, blended in between. The one definition the model (no
// rope_freqs tensor), ridge synth (writing one) and ridge convert (writing one) share.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace ridge {

inline double llama3_rope_factor(double theta, int64_t dims, int64_t i, float factor, float low_freq_factor,
                                 float high_freq_factor, int64_t original_context) {
  const double freq = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dims));
  const double wavelen = 2.0 * std::numbers::pi / freq;
  const double ctx = static_cast<double>(original_context);
  if (wavelen < ctx / high_freq_factor) return 1.0;
  if (wavelen > ctx / low_freq_factor) return factor;
  const double smooth = (ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
  return 1.0 / ((1.0 - smooth) / factor + smooth);
}

}  // namespace ridge
