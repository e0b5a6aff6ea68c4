// Routines exported by x86_avx2/ (compiled with AVX2 + FMA + F16C flags; call only when
// isa_supported(Isa::kAvx2)). Registered in kernels/isa_tables.cpp.
#pragma once

#include "kernels/matmul_driver.h"

namespace ridge::kernels::avx2 {

// Float weights, f32 activations (float_dot.cpp).
void rows_f32(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy);
void rows_f16(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy);
void rows_bf16(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy);
constexpr int64_t kFloatRowGrain = 2;

// Q8_0 weights, Q8_0 activations (q8_0.cpp).
void rows_q8_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy);
constexpr int64_t kQ8_0RowGrain = 8;

// The Q8_0 activation quantizer (act_q8_0.cpp): same bytes as kernels::quantize_act_row_q8_0.
void quantize_act_row_q8_0(const float* x, int64_t n, int8_t* qs, float* d, int32_t* sums);

// The Q8_K activation quantizer (act_q8_k.cpp): same bytes as kernels::quantize_act_row_q8_k.
void quantize_act_row_q8_k(const float* x, int64_t n, int8_t* qs, float* d, int16_t* bsums);

}  // namespace ridge::kernels::avx2
