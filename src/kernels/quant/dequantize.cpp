// Reference decoders. Each evaluates the format's formula with the float operations in ggml's
// order (scale products first, then times q, then the min), so results are bit-identical.
#include <cstring>

#include "base/check.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/grid_formats.h"
#include "kernels/quant/mxfp4.h"
#include "kernels/quant/scale_packing.h"
#include "kernels/quant/quants.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

uint32_t load_qh(const uint8_t* qh) {
  uint32_t v;
  std::memcpy(&v, qh, 4);
  return v;  // little-endian host (x86)
}

void dequant_q4_0(const BlockQ4_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQk) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < kQk / 2; ++j) {
      y[j] = static_cast<float>((b[i].qs[j] & 0x0f) - 8) * d;
      y[j + 16] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequant_q4_1(const BlockQ4_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQk) {
    const float d = fp16_to_f32(b[i].d);
    const float m = fp16_to_f32(b[i].m);
    for (int j = 0; j < kQk / 2; ++j) {
      y[j] = static_cast<float>(b[i].qs[j] & 0x0f) * d + m;
      y[j + 16] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

void dequant_q5_0(const BlockQ5_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQk) {
    const float d = fp16_to_f32(b[i].d);
    const uint32_t qh = load_qh(b[i].qh);
    for (int j = 0; j < kQk / 2; ++j) {
      const int lo = (b[i].qs[j] & 0x0f) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int hi = (b[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      y[j] = static_cast<float>(lo - 16) * d;
      y[j + 16] = static_cast<float>(hi - 16) * d;
    }
  }
}

void dequant_q5_1(const BlockQ5_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQk) {
    const float d = fp16_to_f32(b[i].d);
    const float m = fp16_to_f32(b[i].m);
    const uint32_t qh = load_qh(b[i].qh);
    for (int j = 0; j < kQk / 2; ++j) {
      const int lo = (b[i].qs[j] & 0x0f) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int hi = (b[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      y[j] = static_cast<float>(lo) * d + m;
      y[j + 16] = static_cast<float>(hi) * d + m;
    }
  }
}

template <typename Block>
void dequant_q8(const Block* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQk) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < kQk; ++j) y[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void dequant_q2_k(const BlockQ2_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const float dmin = fp16_to_f32(b[i].dmin);
    for (int h = 0; h < 2; ++h) {
      for (int j = 0; j < 4; ++j) {
        for (int s = 0; s < 2; ++s) {
          const uint8_t sc = b[i].scales[8 * h + 2 * j + s];
          const float dl = d * static_cast<float>(sc & 0x0f);
          const float ml = dmin * static_cast<float>(sc >> 4);
          const uint8_t* q = b[i].qs + 32 * h + 16 * s;
          for (int l = 0; l < 16; ++l) {
            *y++ = dl * static_cast<float>((q[l] >> (2 * j)) & 3) - ml;
          }
        }
      }
    }
  }
}

void dequant_q3_k(const BlockQ3_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    for (int h = 0; h < 2; ++h) {
      for (int j = 0; j < 4; ++j) {
        for (int s = 0; s < 2; ++s) {
          const float dl = d * static_cast<float>(unpack_scale_q3_k(b[i].scales, 8 * h + 2 * j + s));
          const uint8_t* q = b[i].qs + 32 * h + 16 * s;
          const uint8_t* hm = b[i].hmask + 16 * s;
          const int bit = 4 * h + j;
          for (int l = 0; l < 16; ++l) {
            const int v = ((q[l] >> (2 * j)) & 3) - (((hm[l] >> bit) & 1) ? 0 : 4);
            *y++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

template <bool kFiveBit, typename Block>
void dequant_q45_k(const Block* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const float dmin = fp16_to_f32(b[i].dmin);
    for (int g = 0; g < 4; ++g) {
      for (int hi = 0; hi < 2; ++hi) {
        uint8_t sc, mn;
        unpack_scale_min_k4(b[i].scales, 2 * g + hi, &sc, &mn);
        const float dl = d * static_cast<float>(sc);
        const float ml = dmin * static_cast<float>(mn);
        for (int l = 0; l < 32; ++l) {
          int q = (b[i].qs[32 * g + l] >> (4 * hi)) & 0x0f;
          if constexpr (kFiveBit) q |= ((b[i].qh[l] >> (2 * g + hi)) & 1) << 4;
          *y++ = dl * static_cast<float>(q) - ml;
        }
      }
    }
  }
}

void dequant_q6_k(const BlockQ6_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 4; ++k) {
        for (int l = 0; l < 32; ++l) {
          const uint8_t ql = b[i].ql[64 * h + l + 32 * (k & 1)];
          const int lo = k >= 2 ? (ql >> 4) : (ql & 0x0f);
          const int hb = (b[i].qh[32 * h + l] >> (2 * k)) & 3;
          const int sc = b[i].scales[8 * h + 2 * k + l / 16];
          *y++ = d * static_cast<float>(sc) * static_cast<float>((lo | (hb << 4)) - 32);
        }
      }
    }
  }
}

void dequant_q8_k(const BlockQ8_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    for (int j = 0; j < kQkK; ++j) *y++ = b[i].d * static_cast<float>(b[i].qs[j]);
  }
}

// ggml's order: the table value (an integer, exact in f32) times the halved scale.
void dequant_mxfp4(const BlockMxfp4* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQk) {
    const float d = mxfp4_half_scale(b[i].e);
    for (int j = 0; j < kQk / 2; ++j) {
      y[j] = static_cast<float>(kMxfp4Values[b[i].qs[j] & 0x0f]) * d;
      y[j + 16] = static_cast<float>(kMxfp4Values[b[i].qs[j] >> 4]) * d;
    }
  }
}

// 32 elements of IQ4_NL's table under scale d, in ggml's order (d times the value).
void decode_iq4(const uint8_t* qs, float d, float* y) {
  for (int j = 0; j < kQk / 2; ++j) {
    y[j] = d * static_cast<float>(kIq4NlValues[qs[j] & 0x0f]);
    y[j + 16] = d * static_cast<float>(kIq4NlValues[qs[j] >> 4]);
  }
}

void dequant_iq4_nl(const BlockIq4Nl* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQk) {
    decode_iq4(b[i].qs, fp16_to_f32(b[i].d), y);
  }
}

// ggml's order: dl = d * (ls - 32), then dl times the table value.
void dequant_iq4_xs(const BlockIq4Xs* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    for (int ib = 0; ib < kQkK / kQk; ++ib, y += kQk) {
      decode_iq4(b[i].qs + 16 * ib, d * static_cast<float>(iq4_xs_scale(b[i], ib) - 32), y);
    }
  }
}

}  // namespace

bool can_quantize(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0: case GgmlType::kQ4_1: case GgmlType::kQ5_0: case GgmlType::kQ5_1:
    case GgmlType::kQ8_0: case GgmlType::kQ8_1: case GgmlType::kQ2_K: case GgmlType::kQ3_K:
    case GgmlType::kQ4_K: case GgmlType::kQ5_K: case GgmlType::kQ6_K: case GgmlType::kQ8_K:
    case GgmlType::kMXFP4: case GgmlType::kIQ4_NL: case GgmlType::kIQ4_XS:
      return true;
    default:
      return with_grid_format(type, [](auto) {});
  }
}

bool can_dequantize(GgmlType type) { return can_quantize(type); }

void dequantize_row_quant(GgmlType type, const void* src, float* dst, int64_t n) {
  RIDGE_CHECK(can_dequantize(type));
  const int64_t qk = traits(type).block_elems;
  RIDGE_CHECK(n >= 0 && n % qk == 0);
  const int64_t nb = n / qk;
  switch (type) {
    case GgmlType::kQ4_0: return dequant_q4_0(static_cast<const BlockQ4_0*>(src), dst, nb);
    case GgmlType::kQ4_1: return dequant_q4_1(static_cast<const BlockQ4_1*>(src), dst, nb);
    case GgmlType::kQ5_0: return dequant_q5_0(static_cast<const BlockQ5_0*>(src), dst, nb);
    case GgmlType::kQ5_1: return dequant_q5_1(static_cast<const BlockQ5_1*>(src), dst, nb);
    case GgmlType::kQ8_0: return dequant_q8(static_cast<const BlockQ8_0*>(src), dst, nb);
    case GgmlType::kQ8_1: return dequant_q8(static_cast<const BlockQ8_1*>(src), dst, nb);
    case GgmlType::kQ2_K: return dequant_q2_k(static_cast<const BlockQ2_K*>(src), dst, nb);
    case GgmlType::kQ3_K: return dequant_q3_k(static_cast<const BlockQ3_K*>(src), dst, nb);
    case GgmlType::kQ4_K:
      return dequant_q45_k<false>(static_cast<const BlockQ4_K*>(src), dst, nb);
    case GgmlType::kQ5_K:
      return dequant_q45_k<true>(static_cast<const BlockQ5_K*>(src), dst, nb);
    case GgmlType::kQ6_K: return dequant_q6_k(static_cast<const BlockQ6_K*>(src), dst, nb);
    case GgmlType::kQ8_K: return dequant_q8_k(static_cast<const BlockQ8_K*>(src), dst, nb);
    case GgmlType::kMXFP4: return dequant_mxfp4(static_cast<const BlockMxfp4*>(src), dst, nb);
    case GgmlType::kIQ4_NL: return dequant_iq4_nl(static_cast<const BlockIq4Nl*>(src), dst, nb);
    case GgmlType::kIQ4_XS: return dequant_iq4_xs(static_cast<const BlockIq4Xs*>(src), dst, nb);
    default: return dequantize_grid(type, src, dst, nb);
  }
}

}  // namespace ridge::kernels
