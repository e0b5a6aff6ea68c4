#include "kernels/quant/act_q8_k.h"

#include <cmath>

#include "kernels/matmul_driver.h"

namespace ridge::kernels {

void quantize_act_row_q8_k(const float* x, int64_t n, int8_t* qs, float* d, int16_t* bsums) {
  for (int64_t b = 0; b < n / kQ8_KBlock; ++b) {
    const float* xb = x + b * kQ8_KBlock;
    int8_t* qb = qs + b * kQ8_KBlock;
    float amax = 0.0f;  // (plain compares: std::fmax is a libm call at baseline x86-64)
    for (int64_t k = 0; k < kQ8_KBlock; ++k) {
      const float a = std::fabs(xb[k]);
      amax = a > amax ? a : amax;
    }
    // ggml (quantize_row_q8_K_ref) takes iscale = -127 / max for the signed max and d = 1 / iscale,
    // negating every q; in magnitude that is id = 127 / amax and d = 1 / id (not amax / 127, which
    // differs in the last bit now and then), and products d * q are the same floats.
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    d[b] = amax > 0.0f ? 1.0f / id : 0.0f;
    for (int64_t k = 0; k < kQ8_KBlock; ++k) {
      float v = xb[k] * id;
      v = v < 127.0f ? v : 127.0f;  // x * id may round past 127; NaN (inf input) -> 127
      v = v > -127.0f ? v : -127.0f;
      qb[k] = static_cast<int8_t>((v + 12582912.0f) - 12582912.0f);  // round to nearest even
    }
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int k = 0; k < 16; ++k) sum += qb[16 * g + k];
      bsums[b * 16 + g] = static_cast<int16_t>(sum);
    }
  }
}

size_t acts_q8_k_bytes(int64_t m, int64_t cols) {
  const auto nb = static_cast<size_t>(m * (cols / kQ8_KBlock));
  return static_cast<size_t>(m * cols) + nb * sizeof(float) + nb * 16 * sizeof(int16_t);
}

ActsQ8KLayout layout_acts_q8_k(int64_t m, int64_t cols, void* buffer, Acts* acts) {
  const int64_t nb = cols / kQ8_KBlock;
  auto* qs = static_cast<int8_t*>(buffer);
  auto* d = reinterpret_cast<float*>(qs + m * cols);  // m * cols is a multiple of 256
  auto* bsums = reinterpret_cast<int16_t*>(d + m * nb);
  acts->q8_qs = qs;
  acts->q8k_d = d;
  acts->q8k_bsums = bsums;
  return {qs, d, bsums, cols};
}

void quantize_acts_q8_k(const float* x, int64_t ldx, int64_t m, int64_t cols, void* buffer,
                        Acts* acts) {
  const ActsQ8KLayout l = layout_acts_q8_k(m, cols, buffer, acts);
  for (int64_t i = 0; i < m; ++i) {
    quantize_act_row_q8_k(x + i * ldx, cols, l.row_qs(i), l.row_d(i), l.row_bsums(i));
  }
}

}  // namespace ridge::kernels
