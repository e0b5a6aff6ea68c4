// Quantizers of the 256-element K formats. Two stages per super-block:
//  1. each sub-block gets its own least-squares (scale[, min]) from qsearch;
//  2. those are quantized to the format's small integers against an fp16 super-scale that maps
//     the largest one to the end of the integer range, and the quants are re-rounded against the
//     scale/min a decoder will actually compute (d * sc, dmin * mn), so stage 2's rounding is
//     partly compensated instead of compounding.
#include <cmath>

#include "kernels/quant/blocks.h"
#include "kernels/quant/scale_packing.h"
#include "kernels/quant/quant_search.h"
#include "kernels/quant/quantize_impl.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

using qsearch::round_clamp;

float store_fp16(float f, uint16_t* dst) {
  *dst = f32_to_fp16(f);
  return fp16_to_f32(*dst);
}

// Integer codes for non-negative values v[0..n) against a stored super-scale of v_max / code_max.
float quantize_unsigned_scales(const float* v, int n, int code_max, uint16_t* d16, uint8_t* code) {
  float vmax = 0.0f;
  for (int i = 0; i < n; ++i) vmax = std::fmax(vmax, v[i]);
  const float d = store_fp16(vmax / static_cast<float>(code_max), d16);
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < n; ++i) code[i] = static_cast<uint8_t>(round_clamp(v[i] * id, 0, code_max));
  return d;
}

// Signed codes in [-n_neg, n_neg - 1] for v[0..16): the largest magnitude maps to -n_neg.
float quantize_signed_scales(const float* v, int n_neg, uint16_t* d16, int* code) {
  float vext = 0.0f;
  for (int i = 0; i < 16; ++i) vext = std::fabs(v[i]) > std::fabs(vext) ? v[i] : vext;
  const float d = store_fp16(vext / static_cast<float>(-n_neg), d16);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < 16; ++i) code[i] = round_clamp(v[i] * id, -n_neg, n_neg - 1);
  return d;
}

// Shared by Q2_K (16 x 16, 2-bit q, 4-bit codes) and Q4_K/Q5_K (8 x 32, 4/5-bit q, 6-bit codes):
// fills q[256] and the (sc, mn) codes; returns through d16/dmin16.
template <int kSub, int kQMax, int kCodeMax>
void quantize_affine_superblock(const float* x, const float* w, uint16_t* d16, uint16_t* dmin16,
                                uint8_t* sc, uint8_t* mn, uint8_t* q) {
  constexpr int kN = kQkK / kSub;
  float scale[kSub];
  float min[kSub];
  for (int i = 0; i < kSub; ++i) {
    const qsearch::Affine a = qsearch::fit_affine(x + kN * i, kN, kQMax, true, w != nullptr ? w + kN * i : nullptr);
    scale[i] = a.scale;
    min[i] = -a.offset;
  }
  const float d = quantize_unsigned_scales(scale, kSub, kCodeMax, d16, sc);
  const float dmin = quantize_unsigned_scales(min, kSub, kCodeMax, dmin16, mn);
  for (int i = 0; i < kSub; ++i) {
    const float dl = d * static_cast<float>(sc[i]);
    const float ml = dmin * static_cast<float>(mn[i]);
    qsearch::quantize_affine(x + kN * i, kN, dl, -ml, kQMax, q + kN * i);
  }
}

// Q3_K and Q6_K: 16 x 16 symmetric sub-blocks with signed scale codes; q biased to unsigned.
template <int kQNeg, int kCodeNeg>
void quantize_symmetric_superblock(const float* x, const float* w, uint16_t* d16, int* code, uint8_t* u) {
  float scale[16];
  for (int i = 0; i < 16; ++i) {
    scale[i] = qsearch::fit_symmetric(x + 16 * i, 16, kQNeg, kQNeg - 1, w != nullptr ? w + 16 * i : nullptr);
  }
  const float d = quantize_signed_scales(scale, kCodeNeg, d16, code);
  for (int i = 0; i < 16; ++i) {
    int8_t q[16];
    qsearch::quantize_symmetric(x + 16 * i, 16, d * static_cast<float>(code[i]), kQNeg, kQNeg - 1,
                                q);
    for (int l = 0; l < 16; ++l) u[16 * i + l] = static_cast<uint8_t>(q[l] + kQNeg);
  }
}

// The weights of super-block i (null without).
const float* block_weights(const float* w, int64_t i) { return w != nullptr ? w + i * kQkK : nullptr; }

}  // namespace

void quantize_q2_k(const float* x, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<BlockQ2_K*>(dst);
  for (int64_t i = 0; i < nb; ++i, x += kQkK) {
    uint8_t sc[16], mn[16], q[kQkK];
    quantize_affine_superblock<16, 3, 15>(x, block_weights(w, i), &b[i].d, &b[i].dmin, sc, mn, q);
    for (int k = 0; k < 16; ++k) b[i].scales[k] = static_cast<uint8_t>(sc[k] | (mn[k] << 4));
    // element 128 h + 32 j + l' (l' < 32) -> bits 2j of qs[32 h + l']
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t* e = q + 128 * h + l;
        b[i].qs[32 * h + l] = static_cast<uint8_t>(e[0] | (e[32] << 2) | (e[64] << 4) | (e[96] << 6));
      }
    }
  }
}

void quantize_q3_k(const float* x, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<BlockQ3_K*>(dst);
  for (int64_t i = 0; i < nb; ++i, x += kQkK) {
    int code[16];
    uint8_t u[kQkK];
    quantize_symmetric_superblock<4, 32>(x, block_weights(w, i), &b[i].d, code, u);
    uint8_t biased[16];
    for (int k = 0; k < 16; ++k) biased[k] = static_cast<uint8_t>(code[k] + 32);
    pack_scales_q3_k(biased, b[i].scales);
    for (int l = 0; l < 32; ++l) b[i].hmask[l] = 0;
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; ++l) {
        uint8_t packed = 0;
        for (int j = 0; j < 4; ++j) {
          const uint8_t v = u[128 * h + 32 * j + l];
          packed = static_cast<uint8_t>(packed | ((v & 3) << (2 * j)));
          b[i].hmask[l] = static_cast<uint8_t>(b[i].hmask[l] | ((v >> 2) << (4 * h + j)));
        }
        b[i].qs[32 * h + l] = packed;
      }
    }
  }
}

template <bool kFiveBit, typename Block>
void quantize_q45_k(const float* x, Block* b, int64_t nb, const float* w) {
  for (int64_t i = 0; i < nb; ++i, x += kQkK) {
    uint8_t sc[8], mn[8], q[kQkK];
    quantize_affine_superblock<8, kFiveBit ? 31 : 15, 63>(x, block_weights(w, i), &b[i].d, &b[i].dmin, sc, mn, q);
    pack_scale_min_k4(sc, mn, b[i].scales);
    if constexpr (kFiveBit) {
      for (int l = 0; l < 32; ++l) b[i].qh[l] = 0;
    }
    for (int g = 0; g < 4; ++g) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = q[64 * g + l];
        const uint8_t hi = q[64 * g + 32 + l];
        b[i].qs[32 * g + l] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
        if constexpr (kFiveBit) {
          b[i].qh[l] = static_cast<uint8_t>(b[i].qh[l] | ((lo >> 4) << (2 * g)) |
                                            ((hi >> 4) << (2 * g + 1)));
        }
      }
    }
  }
}

void quantize_q4_k(const float* x, void* dst, int64_t nb, const float* w) {
  quantize_q45_k<false>(x, static_cast<BlockQ4_K*>(dst), nb, w);
}

void quantize_q5_k(const float* x, void* dst, int64_t nb, const float* w) {
  quantize_q45_k<true>(x, static_cast<BlockQ5_K*>(dst), nb, w);
}

void quantize_q6_k(const float* x, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t i = 0; i < nb; ++i, x += kQkK) {
    int code[16];
    uint8_t u[kQkK];
    quantize_symmetric_superblock<32, 128>(x, block_weights(w, i), &b[i].d, code, u);
    for (int k = 0; k < 16; ++k) b[i].scales[k] = static_cast<int8_t>(code[k]);
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t* e = u + 128 * h + l;  // e[32 k] is element 128 h + 32 k + l
        b[i].ql[64 * h + l] = static_cast<uint8_t>((e[0] & 0x0f) | ((e[64] & 0x0f) << 4));
        b[i].ql[64 * h + 32 + l] = static_cast<uint8_t>((e[32] & 0x0f) | ((e[96] & 0x0f) << 4));
        b[i].qh[32 * h + l] = static_cast<uint8_t>((e[0] >> 4) | ((e[32] >> 4) << 2) |
                                                   ((e[64] >> 4) << 4) | ((e[96] >> 4) << 6));
      }
    }
  }
}

void quantize_q8_k(const float* x, void* dst, int64_t nb) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < nb; ++i, x += kQkK) {
    float amax = 0.0f;
    for (int j = 0; j < kQkK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    b[i].d = amax / 127.0f;
    qsearch::quantize_symmetric(x, kQkK, b[i].d, 127, 127, b[i].qs);
    for (int k = 0; k < 16; ++k) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b[i].qs[16 * k + l];
      b[i].bsums[k] = static_cast<int16_t>(sum);
    }
  }
}

}  // namespace ridge::kernels
