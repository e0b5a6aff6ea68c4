// Reference (scalar) dot products of the quantized weight formats against Q8_0 / Q8_K
// activations: the specification of kernels/quant/quant_rows.h. Each block is first unpacked to
// its integer quants (signed where the format subtracts an offset) and sub-block scales, then the
// integer dots are exact and the float terms are summed block by block.
#include <cmath>

#include "base/check.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/mxfp4.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/quant/rounded.h"
#include "kernels/quant/scale_packing.h"
#include "tensor/fp16.h"

namespace ridge::kernels::quant_ref {
namespace {

// Row i of the activations, in both formats.
struct ActRow {
  const int8_t* q;
  const float* d;       // per block
  const int32_t* sum;   // Q8_0: per block sum of q
  const int16_t* bsum;  // Q8_K: per 16 elements
  const float* s;       // Q8_1 term of each block (Q4_1 / Q5_1 only)
};

ActRow act_row(const Acts& a, int64_t i, int64_t block) {
  const int64_t nb = a.cols / block;
  if (block == kQk) {
    return {a.q8_qs + i * a.cols, a.q8_d + i * nb, a.q8_sum + i * nb, nullptr,
            a.q8_s != nullptr ? a.q8_s + i * nb : nullptr};
  }
  return {a.q8_qs + i * a.cols, a.q8k_d + i * nb, nullptr, a.q8k_bsums + i * nb * 16, nullptr};
}

int dot_i8(const int8_t* w, const int8_t* x, int n) {
  int s = 0;
  for (int k = 0; k < n; ++k) s += w[k] * x[k];
  return s;
}

// q[32] in [0, 31] of a legacy block (4-bit formats leave bit 4 clear).
void unpack_legacy(const uint8_t* qs, const uint8_t* qh, int8_t* q) {
  uint32_t h = 0;
  if (qh != nullptr) h = qh[0] | (qh[1] << 8) | (qh[2] << 16) | (static_cast<uint32_t>(qh[3]) << 24);
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<int8_t>((qs[j] & 15) | (((h >> j) & 1) << 4));
    q[j + 16] = static_cast<int8_t>((qs[j] >> 4) | (((h >> (j + 16)) & 1) << 4));
  }
}

template <typename Block, bool kHasMin, bool kHasHigh>
float dot_legacy(const Block* w, const ActRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int8_t q[kQk];
    if constexpr (kHasHigh) {
      unpack_legacy(w[b].qs, w[b].qh, q);
    } else {
      unpack_legacy(w[b].qs, nullptr, q);
    }
    const int isum = dot_i8(q, x.q + kQk * b, kQk);
    const float dd = fp16_to_f32(w[b].d) * x.d[b];
    if constexpr (kHasMin) {
      // ggml's q4_1 / q5_1 dot: d_w d_x isum + m * s, s the Q8_1 term (matmul_driver.h).
      acc += dd * static_cast<float>(isum) + fp16_to_f32(w[b].m) * x.s[b];
    } else {
      const int offset = kHasHigh ? 16 : 8;  // q - offset is the signed quant
      acc += dd * static_cast<float>(isum - offset * x.sum[b]);
    }
  }
  return acc;
}

float dot_q2_k(const BlockQ2_K* w, const ActRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* xq = x.q + kQkK * b;
    int isum = 0, msum = 0;
    for (int e = 0; e < kQkK; e += 16) {  // sub-block e / 16, see blocks.h for the bit positions
      const int h = e / 128, j = (e % 128) / 32, s = (e % 32) / 16;
      int8_t q[16];
      for (int l = 0; l < 16; ++l) q[l] = static_cast<int8_t>((w[b].qs[32 * h + 16 * s + l] >> (2 * j)) & 3);
      const uint8_t sc = w[b].scales[e / 16];
      isum += (sc & 15) * dot_i8(q, xq + e, 16);
      msum += (sc >> 4) * x.bsum[16 * b + e / 16];
    }
    acc += x.d[b] * fp16_to_f32(w[b].d) * static_cast<float>(isum) -
           x.d[b] * fp16_to_f32(w[b].dmin) * static_cast<float>(msum);
  }
  return acc;
}

float dot_q3_k(const BlockQ3_K* w, const ActRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* xq = x.q + kQkK * b;
    int isum = 0;
    for (int e = 0; e < kQkK; e += 16) {
      const int h = e / 128, j = (e % 128) / 32, s = (e % 32) / 16;
      int8_t q[16];
      for (int l = 0; l < 16; ++l) {
        const int lo = (w[b].qs[32 * h + 16 * s + l] >> (2 * j)) & 3;
        const int hb = (w[b].hmask[16 * s + l] >> (4 * h + j)) & 1;
        q[l] = static_cast<int8_t>(lo - (hb ? 0 : 4));
      }
      isum += unpack_scale_q3_k(w[b].scales, e / 16) * dot_i8(q, xq + e, 16);
    }
    acc += x.d[b] * fp16_to_f32(w[b].d) * static_cast<float>(isum);
  }
  return acc;
}

template <bool kFiveBit, typename Block>
float dot_q45_k(const Block* w, const ActRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* xq = x.q + kQkK * b;
    int isum = 0, msum = 0;
    for (int sub = 0; sub < 8; ++sub) {
      const int g = sub / 2, hi = sub % 2;
      int8_t q[32];
      for (int l = 0; l < 32; ++l) {
        int v = (w[b].qs[32 * g + l] >> (4 * hi)) & 15;
        if constexpr (kFiveBit) v |= ((w[b].qh[l] >> sub) & 1) << 4;
        q[l] = static_cast<int8_t>(v);
      }
      uint8_t sc, mn;
      unpack_scale_min_k4(w[b].scales, sub, &sc, &mn);
      isum += sc * dot_i8(q, xq + 32 * sub, 32);
      msum += mn * (x.bsum[16 * b + 2 * sub] + x.bsum[16 * b + 2 * sub + 1]);
    }
    acc += x.d[b] * fp16_to_f32(w[b].d) * static_cast<float>(isum) -
           x.d[b] * fp16_to_f32(w[b].dmin) * static_cast<float>(msum);
  }
  return acc;
}

float dot_q6_k(const BlockQ6_K* w, const ActRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* xq = x.q + kQkK * b;
    int isum = 0;
    for (int e = 0; e < kQkK; e += 16) {
      const int h = e / 128, k = (e % 128) / 32, l0 = e % 32;
      int8_t q[16];  // unsigned quants 0..63; the -32 offset goes through bsum
      for (int l = l0; l < l0 + 16; ++l) {
        const uint8_t ql = w[b].ql[64 * h + l + 32 * (k & 1)];
        const int lo = k >= 2 ? ql >> 4 : ql & 15;
        q[l - l0] = static_cast<int8_t>(lo | (((w[b].qh[32 * h + l] >> (2 * k)) & 3) << 4));
      }
      isum += w[b].scales[e / 16] * (dot_i8(q, xq + e, 16) - 32 * x.bsum[16 * b + e / 16]);
    }
    acc += x.d[b] * fp16_to_f32(w[b].d) * static_cast<float>(isum);
  }
  return acc;
}


// ggml's dot of the 4-bit table formats with Q8_0 (ggml_vec_dot_mxfp4_q8_0_generic,
// ggml_vec_dot_iq4_nl_q8_0_generic): per block the exact integer dot of the 32 table values with
// the q8 values, times d = dx * dw, added to the f32 sum block after block from 0, acc = acc + d *
// float(isum) (a product rounded, then a sum rounded: no fma). MXFP4: the E2M1 values doubled,
// dw = 2^(e - 128) (the halved E8M0 scale, exact: a power of two times an fp16 value), |isum| <=
// 32 * 12 * 127; IQ4_NL: its non-linear table, dw the block's fp16 d, |isum| <= 32 * 127 * 127;
// both exact in f32. Every ISA gives these bits (tests/kernels/mxfp4_test.cpp,
// quant_llamacpp_test.cpp).
// The 32 table values of 16 qs bytes (element j < 16 the low nibble of qs[j], j + 16 the high).
void unpack_table(const uint8_t* qs, const int8_t (&values)[16], int8_t* q) {
  for (int j = 0; j < kQk / 2; ++j) {
    q[j] = values[qs[j] & 15];
    q[j + 16] = values[qs[j] >> 4];
  }
}

template <typename Block, const int8_t (&kValues)[16], float (*kScale)(const Block&)>
float dot_table(const Block* w, const ActRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int8_t q[kQk];
    unpack_table(w[b].qs, kValues, q);
    const int isum = dot_i8(q, x.q + kQk * b, kQk);
    const float d = x.d[b] * kScale(w[b]);
    acc += rounded(d * static_cast<float>(isum));
  }
  return acc;
}

float mxfp4_scale(const BlockMxfp4& b) { return mxfp4_half_scale(b.e); }
float iq4_nl_scale(const BlockIq4Nl& b) { return fp16_to_f32(b.d); }

// IQ4_XS x Q8_K, the K formats' rule (ggml's x86 kernels' too): per super-block the exact integer
// total isum = sum_ib (ls_ib - 32) * dot(table values of sub-block ib, x) (|isum| < 2^27), then
// acc = fma(float(isum), dw * dx, acc): one rounding of the product and sum. Every ISA's kernel
// computes these operations (AVX-512: kquant_iq4xs.cpp's float_step).
float dot_iq4_xs(const BlockIq4Xs* w, const ActRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t isum = 0;
    for (int ib = 0; ib < kQkK / kQk; ++ib) {
      int8_t q[kQk];
      unpack_table(w[b].qs + 16 * ib, kIq4NlValues, q);
      isum += (iq4_xs_scale(w[b], ib) - 32) * dot_i8(q, x.q + kQkK * b + kQk * ib, kQk);
    }
    acc = std::fma(static_cast<float>(isum), fp16_to_f32(w[b].d) * x.d[b], acc);
  }
  return acc;
}

template <typename Block, int kBlock, float (*kDot)(const Block*, const ActRow&, int64_t)>
void rows(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  RIDGE_CHECK(w.row_bytes == static_cast<uint64_t>(a.cols / kBlock) * sizeof(Block));
  for (int64_t j = j0; j < j1; ++j) {
    const auto* wr = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w.data) + j * w.row_bytes);
    for (int64_t i = 0; i < a.m; ++i) y[i * ldy + j] = kDot(wr, act_row(a, i, kBlock), a.cols / kBlock);
  }
}

}  // namespace

void rows_q4_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ4_0, kQk, dot_legacy<BlockQ4_0, false, false>>(w, a, j0, j1, y, ldy);
}
void rows_q4_1(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ4_1, kQk, dot_legacy<BlockQ4_1, true, false>>(w, a, j0, j1, y, ldy);
}
void rows_q5_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ5_0, kQk, dot_legacy<BlockQ5_0, false, true>>(w, a, j0, j1, y, ldy);
}
void rows_q5_1(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ5_1, kQk, dot_legacy<BlockQ5_1, true, true>>(w, a, j0, j1, y, ldy);
}
void rows_q2_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ2_K, kQkK, dot_q2_k>(w, a, j0, j1, y, ldy);
}
void rows_q3_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ3_K, kQkK, dot_q3_k>(w, a, j0, j1, y, ldy);
}
void rows_q4_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ4_K, kQkK, dot_q45_k<false, BlockQ4_K>>(w, a, j0, j1, y, ldy);
}
void rows_q5_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ5_K, kQkK, dot_q45_k<true, BlockQ5_K>>(w, a, j0, j1, y, ldy);
}
void rows_q6_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockQ6_K, kQkK, dot_q6_k>(w, a, j0, j1, y, ldy);
}

void rows_mxfp4(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockMxfp4, kQk, dot_table<BlockMxfp4, kMxfp4Values, mxfp4_scale>>(w, a, j0, j1, y, ldy);
}
void rows_iq4_xs(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockIq4Xs, kQkK, dot_iq4_xs>(w, a, j0, j1, y, ldy);
}
void rows_iq4_nl(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows<BlockIq4Nl, kQk, dot_table<BlockIq4Nl, kIq4NlValues, iq4_nl_scale>>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::quant_ref
