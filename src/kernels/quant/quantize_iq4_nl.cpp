// IQ4_NL quantizer (ridge's own search; llama.cpp decodes its blocks as ridge does): per block of
// 32, scales that put the largest-magnitude element on or near either end of the table are
// tried; for each, every element takes its nearest table value, the scale is refitted by least
// squares to those values, and the fit with the smallest (weighted) squared error is kept.
#include <cmath>
#include <cstdint>

#include "kernels/quant/blocks.h"
#include "kernels/quant/quantize_impl.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

// The index of the table value nearest to v (the table is ascending).
int nearest(float v) {
  int lo = 0;
  for (int q = 1; q < 16; ++q) {
    if (std::abs(v - static_cast<float>(kIq4NlValues[q])) < std::abs(v - static_cast<float>(kIq4NlValues[lo]))) lo = q;
  }
  return lo;
}

struct Fit {
  float d = 0.0f;
  double err = 0.0;
  uint8_t q[kQk] = {};
};

// Indices for scale d, then the least-squares scale for them and its error.
Fit fit(const float* x, const float* w, float d) {
  Fit f;
  const float id = 1.0f / d;
  double xv = 0.0, vv = 0.0;
  for (int j = 0; j < kQk; ++j) {
    f.q[j] = static_cast<uint8_t>(nearest(x[j] * id));
    const double v = kIq4NlValues[f.q[j]], wj = w ? w[j] : 1.0;
    xv += wj * x[j] * v;
    vv += wj * v * v;
  }
  f.d = vv > 0 ? static_cast<float>(xv / vv) : 0.0f;
  for (int j = 0; j < kQk; ++j) {
    const double e = x[j] - static_cast<double>(f.d) * kIq4NlValues[f.q[j]], wj = w ? w[j] : 1.0;
    f.err += wj * e * e;
  }
  return f;
}

}  // namespace

void quantize_iq4_nl(const float* x, void* dst, int64_t nb, const float* w) {
  auto* out = static_cast<BlockIq4Nl*>(dst);
  for (int64_t b = 0; b < nb; ++b, x += kQk, w = w ? w + kQk : nullptr) {
    float max = 0.0f;  // the element of largest magnitude, with its sign
    for (int j = 0; j < kQk; ++j) {
      if (std::abs(x[j]) > std::abs(max)) max = x[j];
    }
    BlockIq4Nl& blk = out[b];
    if (max == 0.0f || !std::isfinite(max)) {
      blk.d = f32_to_fp16(0.0f);
      for (uint8_t& q : blk.qs) q = 0x88;
      continue;
    }
    Fit best;
    best.err = INFINITY;
    for (int end : {0, 15}) {  // the largest element at the table's negative or positive end
      for (int t = -6; t <= 6; ++t) {
        const float v = static_cast<float>(kIq4NlValues[end]) + 2.0f * static_cast<float>(t);
        const Fit f = fit(x, w, max / v);
        if (f.d != 0.0f && f.err < best.err) best = f;
      }
    }
    blk.d = f32_to_fp16(best.d);
    for (int j = 0; j < kQk / 2; ++j) blk.qs[j] = static_cast<uint8_t>(best.q[j] | (best.q[j + 16] << 4));
  }
}

}  // namespace ridge::kernels
