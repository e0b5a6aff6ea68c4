// Reference Q8_0 matmul: GGUF block = fp16 d + 32 int8 q, value = d * q.
//
// The specification of the dot product (every ISA reproduces it bit for bit): activations are
// quantized to Q8_0 by quantize_act_row_q8_0; per block b the integer dot isum_b is exact; the
// f32 sum runs over blocks in order, acc = fma(float(isum_b), dx_b * dw_b, acc), from acc = 0.
// |isum_b| <= 32 * 128 * 127 < 2^24, so float(isum_b) is exact.
#include <cmath>

#include "kernels/ref/ref_types.h"
#include "tensor/fp16.h"

namespace ridge::kernels::ref {
namespace {

constexpr size_t kBlockBytes = 34;

inline float block_d(const uint8_t* block) {
  return fp16_to_f32(static_cast<uint16_t>(block[0] | (block[1] << 8)));
}

void rows_q8_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y,
               int64_t ldy) {
  const int64_t nb = a.cols / kQ8_0Block;
  for (int64_t j = j0; j < j1; ++j) {
    const auto* wr = static_cast<const uint8_t*>(w.data) + static_cast<uint64_t>(j) * w.row_bytes;
    for (int64_t i = 0; i < a.m; ++i) {
      const int8_t* xq = a.q8_qs + i * a.cols;
      const float* xd = a.q8_d + i * nb;
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = wr + b * kBlockBytes;
        const auto* wq = reinterpret_cast<const int8_t*>(blk + 2);
        int32_t isum = 0;
        for (int64_t k = 0; k < kQ8_0Block; ++k) isum += wq[k] * xq[b * kQ8_0Block + k];
        acc = std::fma(static_cast<float>(isum), block_d(blk) * xd[b], acc);
      }
      y[i * ldy + j] = acc;
    }
  }
}

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint8_t*>(src);
  for (int64_t b = 0; b < n / kQ8_0Block; ++b) {
    const uint8_t* blk = s + b * kBlockBytes;
    const float d = block_d(blk);
    const auto* q = reinterpret_cast<const int8_t*>(blk + 2);
    for (int64_t k = 0; k < kQ8_0Block; ++k) dst[b * kQ8_0Block + k] = d * static_cast<float>(q[k]);
  }
}

}  // namespace

void add_q8_0(TypeTable& t) {
  t.set(GgmlType::kQ8_0, {rows_q8_0, ActFormat::kQ8_0, 1});
  t.set_dequantize(GgmlType::kQ8_0, dequantize_q8_0);
}

}  // namespace ridge::kernels::ref
