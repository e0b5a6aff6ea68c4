// Per-format quantizers behind quantize_row (internal to kernels/quant). Each writes nb blocks
// from nb * block_elems floats; w (null: none) weighs each element's squared error in the scale
// searches (quant_search.h). The Q8 formats and MXFP4 have no search and ignore it.
#pragma once

#include <cstdint>

#include "kernels/quant/grid_list.h"

namespace ridge::kernels {

void quantize_q4_0(const float* x, void* dst, int64_t nb, const float* w = nullptr);
void quantize_q4_1(const float* x, void* dst, int64_t nb, const float* w = nullptr);
void quantize_q5_0(const float* x, void* dst, int64_t nb, const float* w = nullptr);
void quantize_q5_1(const float* x, void* dst, int64_t nb, const float* w = nullptr);
void quantize_q8_0(const float* x, void* dst, int64_t nb);
void quantize_q8_1(const float* x, void* dst, int64_t nb);
void quantize_q2_k(const float* x, void* dst, int64_t nb, const float* w = nullptr);
void quantize_q3_k(const float* x, void* dst, int64_t nb, const float* w = nullptr);
void quantize_q4_k(const float* x, void* dst, int64_t nb, const float* w = nullptr);
void quantize_q5_k(const float* x, void* dst, int64_t nb, const float* w = nullptr);
void quantize_q6_k(const float* x, void* dst, int64_t nb, const float* w = nullptr);
void quantize_q8_k(const float* x, void* dst, int64_t nb);
void quantize_mxfp4(const float* x, void* dst, int64_t nb);  // quantize_mxfp4.cpp: ggml's bytes
void quantize_iq4_nl(const float* x, void* dst, int64_t nb, const float* w = nullptr);  // quantize_iq4_nl.cpp
void quantize_iq4_xs(const float* x, void* dst, int64_t nb, const float* w = nullptr);  // quantize_iq4_nl.cpp
// The grid and ternary formats (quantize_grid.cpp): quantize_tq1_0 ... quantize_iq1_m, one per
// entry of kernels/quant/grid_list.h.
#define RIDGE_GRID_QUANTIZER(T, F, n) void quantize_##n(const float* x, void* dst, int64_t nb, const float* w = nullptr);
RIDGE_GRID_FORMATS(RIDGE_GRID_QUANTIZER)
#undef RIDGE_GRID_QUANTIZER

}  // namespace ridge::kernels
