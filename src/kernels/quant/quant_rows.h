// Matmul rows routines of the quantized weight formats (the kernels' TypeTable extension point,
// docs/kernels.md), for every ISA, and the plain functions that register them.
//
// Dot product (the specification, kernels/quant/ref_rows.cpp): activations are quantized once per
// call, to Q8_0 blocks for the 32-element formats (their d, as the Q8_0 matmul does) and to Q8_K
// blocks for the K formats (kernels/quant/act_q8_k.h). Per block the integer dot is exact; the
// block's float terms (scale products times integer sums) are summed in f32. The SIMD versions
// compute the same integers but sum the float terms in vector lanes, so they agree with the
// reference to f32 rounding (tests/kernels/quant_dot_test.cpp states the tolerance). Each output
// depends only on its weight row and activation row: batch and thread invariant per ISA.
#pragma once

#include "kernels/matmul_driver.h"
#include "kernels/quant/grid_list.h"

namespace ridge::kernels {

#define RIDGE_GRID_ROWS_DECL(T, F, n) QuantRows rows_##n;

// Registration (ISA-neutral code; the avx2/avx512 variants override what those ISAs accelerate).
void add_quant_rows_ref(TypeTable& t);
void add_quant_rows_avx2(TypeTable& t);
void add_quant_rows_avx512(TypeTable& t);

// The rows routines of one ISA (function type of MatmulRowsFn; declared through it for brevity).
using QuantRows = void(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y,
                       int64_t ldy);

namespace quant_ref {
QuantRows rows_q4_0, rows_q4_1, rows_q5_0, rows_q5_1;
QuantRows rows_q2_k, rows_q3_k, rows_q4_k, rows_q5_k, rows_q6_k;
QuantRows rows_mxfp4;  // Q8_0 activations, ggml's per-block rule without fma (bit-exact spec)
QuantRows rows_iq4_nl;  // Q8_0 activations, the same rule as MXFP4's with a fp16 scale
QuantRows rows_iq4_xs;  // Q8_K activations, ggml's per-sub-block rule (bit-exact spec)
// The grid formats (kernels/quant/grid_formats.h: IQ1-IQ3 and TQ), Q8_K activations, ggml's
// generic dot's bits; nullptr for other types.
MatmulRowsFn grid_rows(GgmlType type);
}  // namespace quant_ref

namespace quant_avx2 {  // x86_avx2/quant_*.cpp (call only when isa_supported(Isa::kAvx2))
QuantRows rows_q2_k, rows_q3_k, rows_q4_k, rows_q5_k, rows_q6_k;  // quant_dot.cpp
QuantRows rows_q4_0, rows_q4_1, rows_q5_0, rows_q5_1;              // quant_dot_more.cpp
QuantRows rows_mxfp4;  // mxfp4.cpp: bit-identical to quant_ref::rows_mxfp4; row grain kMxfp4Grain
QuantRows rows_iq4_nl;  // mxfp4.cpp: bit-identical to quant_ref::rows_iq4_nl; row grain kMxfp4Grain
QuantRows rows_iq4_xs;  // mxfp4.cpp: bit-identical to quant_ref::rows_iq4_xs; row grain kMxfp4Grain
inline constexpr int64_t kMxfp4Grain = 8;
// grid_formats.cpp: quant_ref::grid_rows's bits; row grain kMxfp4Grain
RIDGE_GRID_FORMATS(RIDGE_GRID_ROWS_DECL)
}  // namespace quant_avx2

namespace quant_avx512 {  // x86_avx512/quant_*.cpp, kquant_*.cpp (call only when isa_supported(Isa::kAvx512))
QuantRows rows_q4_k, rows_q5_k, rows_q6_k;  // kquant_q45k.cpp, kquant_q6k.cpp
QuantRows rows_q2_k, rows_q3_k;  // quant_dot_low_bits.cpp
QuantRows rows_iq4_xs;  // kquant_iq4xs.cpp: bit-identical to quant_ref::rows_iq4_xs; kRows only
// kquant_grid.cpp: quant_ref::grid_rows's bits; kRows only, row grain 16
RIDGE_GRID_FORMATS(RIDGE_GRID_ROWS_DECL)
}  // namespace quant_avx512

#undef RIDGE_GRID_ROWS_DECL

}  // namespace ridge::kernels
