// The grid formats' quantizers: each super-block's choice (kernels/quant/grid_search.h) packed
// into the format's bytes, the inverse of the unpacking in kernels/quant/grid_formats.h; and the
// ternary formats TQ1_0 / TQ2_0, digits in {-1, 0, 1} under one least-squares scale.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/quant/grid_formats.h"
#include "kernels/quant/grid_search.h"
#include "kernels/quant/quantize_impl.h"

namespace ridge::kernels {
namespace {

constexpr GridSpec kIq2XxsSpec{GgmlType::kIQ2_XXS, GridSigns::kEven, GridDelta::kNone, 32, 15, 0.125f};
constexpr GridSpec kIq2XsSpec{GgmlType::kIQ2_XS, GridSigns::kEven, GridDelta::kNone, 16, 15, 0.125f};
constexpr GridSpec kIq2SSpec{GgmlType::kIQ2_S, GridSigns::kFree, GridDelta::kNone, 16, 15, 0.125f};
constexpr GridSpec kIq3XxsSpec{GgmlType::kIQ3_XXS, GridSigns::kEven, GridDelta::kNone, 32, 15, 0.25f};
constexpr GridSpec kIq3SSpec{GgmlType::kIQ3_S, GridSigns::kFree, GridDelta::kNone, 32, 15, 1.0f};
constexpr GridSpec kIq1SSpec{GgmlType::kIQ1_S, GridSigns::kNone, GridDelta::kPerScale, 32, 7, 0.125f};
constexpr GridSpec kIq1MSpec{GgmlType::kIQ1_M, GridSigns::kNone, GridDelta::kPerGroup, 16, 7, 0.125f};

void store32(void* p, uint32_t v) { std::memcpy(p, &v, 4); }

void pack(const GridChoice& c, BlockIq2Xxs& b) {
  b.d = f32_to_fp16(c.d);
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t idx = 0, aux = static_cast<uint32_t>(c.code[ib]) << 28;
    for (int l = 0; l < 4; ++l) {
      idx |= static_cast<uint32_t>(c.entry[4 * ib + l]) << (8 * l);
      aux |= static_cast<uint32_t>(c.sign[4 * ib + l] & 127) << (7 * l);
    }
    store32(b.qs + 4 * ib, idx);
    store32(b.qs + 4 * ib + 2, aux);
  }
}

void pack(const GridChoice& c, BlockIq2Xs& b) {
  b.d = f32_to_fp16(c.d);
  for (int ib = 0; ib < 8; ++ib) {
    b.scales[ib] = static_cast<uint8_t>(c.code[2 * ib] | (c.code[2 * ib + 1] << 4));
    for (int l = 0; l < 4; ++l) {
      b.qs[4 * ib + l] = static_cast<uint16_t>(c.entry[4 * ib + l] | ((c.sign[4 * ib + l] & 127) << 9));
    }
  }
}

void pack(const GridChoice& c, BlockIq2S& b) {
  b.d = f32_to_fp16(c.d);
  for (int ib = 0; ib < 8; ++ib) {
    b.scales[ib] = static_cast<uint8_t>(c.code[2 * ib] | (c.code[2 * ib + 1] << 4));
    b.qh[ib] = 0;
    for (int l = 0; l < 4; ++l) {
      const uint16_t entry = c.entry[4 * ib + l];
      b.qs[4 * ib + l] = static_cast<uint8_t>(entry & 255);
      b.qh[ib] = static_cast<uint8_t>(b.qh[ib] | ((entry >> 8) << (2 * l)));
      b.qs[32 + 4 * ib + l] = c.sign[4 * ib + l];
    }
  }
}

void pack(const GridChoice& c, BlockIq3Xxs& b) {
  b.d = f32_to_fp16(c.d);
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t aux = static_cast<uint32_t>(c.code[ib]) << 28;
    for (int l = 0; l < 4; ++l) aux |= static_cast<uint32_t>(c.sign[4 * ib + l] & 127) << (7 * l);
    for (int j = 0; j < 8; ++j) b.qs[8 * ib + j] = static_cast<uint8_t>(c.entry[8 * ib + j]);
    store32(b.qs + 64 + 4 * ib, aux);
  }
}

void pack(const GridChoice& c, BlockIq3S& b) {
  b.d = f32_to_fp16(c.d);
  std::memset(b.scales, 0, sizeof b.scales);
  for (int ib = 0; ib < 8; ++ib) {
    b.scales[ib / 2] = static_cast<uint8_t>(b.scales[ib / 2] | (c.code[ib] << (4 * (ib % 2))));
    b.qh[ib] = 0;
    for (int j = 0; j < 8; ++j) {
      const uint16_t entry = c.entry[8 * ib + j];
      b.qs[8 * ib + j] = static_cast<uint8_t>(entry & 255);
      b.qh[ib] = static_cast<uint8_t>(b.qh[ib] | ((entry >> 8) << j));
    }
    for (int l = 0; l < 4; ++l) b.signs[4 * ib + l] = c.sign[4 * ib + l];
  }
}

void pack(const GridChoice& c, BlockIq1S& b) {
  b.d = f32_to_fp16(c.d);
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t h = static_cast<uint32_t>(c.code[ib]) << 12 | (c.delta[4 * ib] < 0 ? 0x8000u : 0u);
    for (int l = 0; l < 4; ++l) {
      const uint16_t entry = c.entry[4 * ib + l];
      b.qs[4 * ib + l] = static_cast<uint8_t>(entry & 255);
      h |= static_cast<uint32_t>(entry >> 8) << (3 * l);
    }
    b.qh[ib] = static_cast<uint16_t>(h);
  }
}

void pack(const GridChoice& c, BlockIq1M& b) {
  const uint16_t d = f32_to_fp16(c.d);
  uint16_t sc[4] = {};
  for (int ib = 0; ib < 8; ++ib) {
    sc[ib / 2] = static_cast<uint16_t>(sc[ib / 2] | ((c.code[2 * ib] | (c.code[2 * ib + 1] << 3)) << (6 * (ib % 2))));
    for (int l = 0; l < 4; ++l) {
      const uint16_t entry = c.entry[4 * ib + l];
      b.qs[4 * ib + l] = static_cast<uint8_t>(entry & 255);
      const uint32_t nibble = (entry >> 8) | (c.delta[4 * ib + l] < 0 ? 8u : 0u);
      uint8_t& h = b.qh[2 * ib + l / 2];
      h = static_cast<uint8_t>(l % 2 == 0 ? nibble : (h | (nibble << 4)));
    }
  }
  for (int i = 0; i < 4; ++i) sc[i] = static_cast<uint16_t>(sc[i] | (((d >> (4 * i)) & 15) << 12));
  std::memcpy(b.scales, sc, sizeof sc);
}

template <typename Block>
void quantize_with(const GridSpec& spec, const float* x, void* dst, int64_t nb, const float* w) {
  auto* out = static_cast<Block*>(dst);
  GridChoice c;
  for (int64_t b = 0; b < nb; ++b, x += kQkK, w = w ? w + kQkK : nullptr) {
    choose_grid(spec, x, w, c);
    std::memset(&out[b], 0, sizeof(Block));
    pack(c, out[b]);
  }
}

// Ternary digits t in {-1, 0, 1} and their scale d, at the least weighted squared error: for any
// d the elements worth a nonzero digit are those with |x| > d / 2 whatever their weight, so the
// best choice is the k largest magnitudes for some k, with d their weighted mean magnitude; every
// k is tried by running sums over the magnitudes in descending order.
float ternary(const float* x, const float* w, int8_t* t) {
  std::fill(t, t + kQkK, int8_t{0});
  int order[kQkK];
  for (int e = 0; e < kQkK; ++e) order[e] = e;
  for (int e = 0; e < kQkK; ++e) {
    if (!std::isfinite(x[e])) return 0.0f;
  }
  std::sort(order, order + kQkK, [&](int a, int b) {
    return std::abs(x[a]) != std::abs(x[b]) ? std::abs(x[a]) > std::abs(x[b]) : a < b;
  });
  double sum_wa = 0.0, sum_w = 0.0, best_gain = 0.0;
  int best_k = 0;
  double best_d = 0.0;
  for (int k = 0; k < kQkK; ++k) {
    const int e = order[k];
    const double we = w != nullptr ? w[e] : 1.0;
    sum_wa += we * std::abs(x[e]);
    sum_w += we;
    const double gain = sum_w > 0.0 ? sum_wa * sum_wa / sum_w : 0.0;  // the error it removes
    if (gain > best_gain) best_gain = gain, best_k = k + 1, best_d = sum_wa / sum_w;
  }
  const float d = fp16_to_f32(f32_to_fp16(static_cast<float>(best_d)));
  if (!(d > 0.0f)) return 0.0f;
  for (int k = 0; k < best_k; ++k) t[order[k]] = static_cast<int8_t>(x[order[k]] < 0.0f ? -1 : 1);
  return d;
}

// Five digits 0..2 (first the most significant) as TQ1_0 stores them: the base-3 number scaled
// to a byte, rounded up, so that digit l is the top bits of 3 * (the byte * 3^l mod 256).
uint8_t trits_byte(const int8_t* t, int n, int stride) {
  uint32_t v = 0;
  for (int l = 0; l < 5; ++l) v = 3 * v + static_cast<uint32_t>(l < n ? t[l * stride] + 1 : 0);
  return static_cast<uint8_t>((v * 256 + 242) / 243);
}

}  // namespace

const GridSpec* grid_spec_of(GgmlType type) {
  for (const GridSpec* s : {&kIq2XxsSpec, &kIq2XsSpec, &kIq2SSpec, &kIq3XxsSpec, &kIq3SSpec, &kIq1SSpec, &kIq1MSpec}) {
    if (s->type == type) return s;
  }
  return nullptr;
}

void quantize_iq2_xxs(const float* x, void* dst, int64_t nb, const float* w) { quantize_with<BlockIq2Xxs>(kIq2XxsSpec, x, dst, nb, w); }
void quantize_iq2_xs(const float* x, void* dst, int64_t nb, const float* w) { quantize_with<BlockIq2Xs>(kIq2XsSpec, x, dst, nb, w); }
void quantize_iq2_s(const float* x, void* dst, int64_t nb, const float* w) { quantize_with<BlockIq2S>(kIq2SSpec, x, dst, nb, w); }
void quantize_iq3_xxs(const float* x, void* dst, int64_t nb, const float* w) { quantize_with<BlockIq3Xxs>(kIq3XxsSpec, x, dst, nb, w); }
void quantize_iq3_s(const float* x, void* dst, int64_t nb, const float* w) { quantize_with<BlockIq3S>(kIq3SSpec, x, dst, nb, w); }
void quantize_iq1_s(const float* x, void* dst, int64_t nb, const float* w) { quantize_with<BlockIq1S>(kIq1SSpec, x, dst, nb, w); }
void quantize_iq1_m(const float* x, void* dst, int64_t nb, const float* w) { quantize_with<BlockIq1M>(kIq1MSpec, x, dst, nb, w); }

void quantize_tq2_0(const float* x, void* dst, int64_t nb, const float* w) {
  auto* out = static_cast<BlockTq2_0*>(dst);
  int8_t t[kQkK];
  for (int64_t b = 0; b < nb; ++b, x += kQkK, w = w ? w + kQkK : nullptr) {
    out[b].d = f32_to_fp16(ternary(x, w, t));
    for (int j = 0; j < 2; ++j) {
      for (int m = 0; m < 32; ++m) {
        uint8_t byte = 0;
        for (int l = 0; l < 4; ++l) byte = static_cast<uint8_t>(byte | ((t[128 * j + 32 * l + m] + 1) << (2 * l)));
        out[b].qs[32 * j + m] = byte;
      }
    }
  }
}

void quantize_tq1_0(const float* x, void* dst, int64_t nb, const float* w) {
  auto* out = static_cast<BlockTq1_0*>(dst);
  int8_t t[kQkK];
  for (int64_t b = 0; b < nb; ++b, x += kQkK, w = w ? w + kQkK : nullptr) {
    out[b].d = f32_to_fp16(ternary(x, w, t));
    for (int m = 0; m < 32; ++m) out[b].qs[m] = trits_byte(t + m, 5, 32);
    for (int m = 0; m < 16; ++m) out[b].qs[32 + m] = trits_byte(t + 160 + m, 5, 16);
    for (int j = 0; j < 4; ++j) out[b].qh[j] = trits_byte(t + 240 + j, 4, 4);
  }
}

}  // namespace ridge::kernels
