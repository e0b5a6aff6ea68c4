// AVX2 matmul of the K formats (Q2_K ... Q6_K) with Q8_K activations: the dot product for decode and
// the panel GEMM for batches, both in kquant_gemm.h over the formats of kquant_formats.h.
#include "kernels/quant/quant_rows.h"
#include "kernels/x86_avx2/kquant_gemm.h"

namespace ridge::kernels::quant_avx2 {

void rows_q2_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_k<FormatQ2K>(w, a, j0, j1, y, ldy);
}

void rows_q3_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_k<FormatQ3K>(w, a, j0, j1, y, ldy);
}

void rows_q4_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_k<FormatQ45K<false>>(w, a, j0, j1, y, ldy);
}

void rows_q5_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_k<FormatQ45K<true>>(w, a, j0, j1, y, ldy);
}

void rows_q6_k(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  rows_k<FormatQ6K>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::quant_avx2
