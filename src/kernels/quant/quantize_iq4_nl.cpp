// IQ4_NL and IQ4_XS quantizers (ridge's own search; llama.cpp decodes their blocks as ridge does): per block of
// 32, scales that put the largest-magnitude element on or near either end of the table are
// tried; for each, every element takes its nearest table value, the scale is refitted by least
// squares to those values, and the fit with the smallest (weighted) squared error is kept.
#include <algorithm>
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

// The block's best fit (d = 0: all zero or not finite).
Fit best_fit(const float* x, const float* w) {
  float max = 0.0f;  // the element of largest magnitude, with its sign
  for (int j = 0; j < kQk; ++j) {
    if (std::abs(x[j]) > std::abs(max)) max = x[j];
  }
  Fit best;
  if (max == 0.0f || !std::isfinite(max)) return best;
  best.err = INFINITY;
  for (int end : {0, 15}) {  // the largest element at the table's negative or positive end
    for (int t = -6; t <= 6; ++t) {
      const float v = static_cast<float>(kIq4NlValues[end]) + 2.0f * static_cast<float>(t);
      const Fit f = fit(x, w, max / v);
      if (f.d != 0.0f && f.err < best.err) best = f;
    }
  }
  if (!std::isfinite(best.err)) best = Fit{};
  return best;
}

void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < kQk / 2; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
}

}  // namespace

void quantize_iq4_nl(const float* x, void* dst, int64_t nb, const float* w) {
  auto* out = static_cast<BlockIq4Nl*>(dst);
  for (int64_t b = 0; b < nb; ++b, x += kQk, w = w ? w + kQk : nullptr) {
    const Fit f = best_fit(x, w);
    out[b].d = f32_to_fp16(f.d);
    if (f.d == 0.0f) {
      for (uint8_t& q : out[b].qs) q = 0x88;
    } else {
      pack_nibbles(f.q, out[b].qs);
    }
  }
}

// IQ4_XS: each sub-block's IQ4_NL fit, the super-block scale d that holds the largest of their
// scales in the 6-bit code (ls - 32 in -32..31), each sub-block's code nearest to its own scale,
// then its nearest table values under the scale it decodes to.
void quantize_iq4_xs(const float* x, void* dst, int64_t nb, const float* w) {
  auto* out = static_cast<BlockIq4Xs*>(dst);
  constexpr int kSub = kQkK / kQk;
  for (int64_t b = 0; b < nb; ++b, x += kQkK, w = w ? w + kQkK : nullptr) {
    BlockIq4Xs& blk = out[b];
    float dl[kSub];
    float d = 0.0f;
    for (int ib = 0; ib < kSub; ++ib) {
      dl[ib] = best_fit(x + kQk * ib, w ? w + kQk * ib : nullptr).d;
      d = std::max(d, dl[ib] > 0 ? dl[ib] / 31.0f : -dl[ib] / 32.0f);
    }
    blk.d = f32_to_fp16(d);
    const float dq = fp16_to_f32(blk.d);
    blk.scales_h = 0;
    for (uint8_t& s : blk.scales_l) s = 0;
    for (int ib = 0; ib < kSub; ++ib) {
      const int ls = dq > 0.0f ? std::clamp(static_cast<int>(std::lround(dl[ib] / dq)) + 32, 0, 63) : 32;
      blk.scales_l[ib / 2] = static_cast<uint8_t>(blk.scales_l[ib / 2] | ((ls & 0xf) << (4 * (ib % 2))));
      blk.scales_h = static_cast<uint16_t>(blk.scales_h | ((ls >> 4) << (2 * ib)));
      const float ds = dq * static_cast<float>(ls - 32);
      uint8_t q[kQk];
      for (int j = 0; j < kQk; ++j) q[j] = static_cast<uint8_t>(ds != 0.0f ? nearest(x[kQk * ib + j] / ds) : 8);
      pack_nibbles(q, blk.qs + 16 * ib);
    }
  }
}

}  // namespace ridge::kernels
