// Routines exported by x86_avx512/ (compiled with AVX-512 flags; call only when
// isa_supported(Isa::kAvx512)). Registered in kernels/isa_tables.cpp.
#pragma once

#include "kernels/matmul_driver.h"

namespace ridge::kernels::avx512 {

// Float weights, f32 activations (float_dot.cpp).
void rows_f32(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy);
void rows_f16(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy);
void rows_bf16(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy);
constexpr int64_t kFloatRowGrain = 4;

// Q8_0 weights, Q8_0 activations (q8_0.cpp).
void rows_q8_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy);
constexpr int64_t kQ8_0RowGrain = 16;

// Q4_0 / Q5_0 weights with Q8_0 activations, Q4_1 / Q5_1 with Q8_1 (legacy_q.cpp): the Q8_0
// panel kernel (panel_q8.h) with each format's block loader; row grain kQ8_0RowGrain.
void rows_q4_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy);
void rows_q4_1(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy);
void rows_q5_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy);
void rows_q5_1(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy);
// MXFP4 weights with Q8_0 activations (legacy_q.cpp, the same panel kernel): bit-identical to
// quant_ref::rows_mxfp4; row grain kQ8_0RowGrain.
void rows_mxfp4(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy);
// IQ4_NL (Q8_0 activations): bit-identical to quant_ref::rows_iq4_nl; row grain kQ8_0RowGrain.
void rows_iq4_nl(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy);

// The Q8_0 activation quantizer (act_q8_0.cpp): same bytes as kernels::quantize_act_row_q8_0.
void quantize_act_row_q8_0(const float* x, int64_t n, int8_t* qs, float* d, int32_t* sums);
// The Q8_K activation quantizer (act_q8_k.cpp): same bytes as kernels::quantize_act_row_q8_k.
void quantize_act_row_q8_k(const float* x, int64_t n, int8_t* qs, float* d, int16_t* bsums);

}  // namespace ridge::kernels::avx512
