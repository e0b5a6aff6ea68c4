// Scalar reference quantization and dequantization of the GGUF block formats (the specification
// every fast kernel is tested against). Formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K, Q8_K, MXFP4, IQ4_NL, IQ4_XS (byte layouts in kernels/quant/blocks.h) and the
// grid and ternary formats IQ1_S ... IQ3_S, TQ1_0, TQ2_0 (kernels/quant/grid_formats.h).
//
// Dequantization is exact: it evaluates the format's formula in the same float operation order as
// ggml, so it is bit-identical to ggml's dequantize_row_*. Quantization is ridge's own algorithm
// (least-squares scale search, see docs/quantization.md); its output is a valid block that any
// GGUF reader decodes, but its bytes differ from llama.cpp's quantizer. Except MXFP4: its scale
// is a power of two fixed by the block's largest magnitude, and ridge writes exactly the bytes of
// ggml's quantize_row_mxfp4_ref (kernels/quant/quantize_mxfp4.cpp).
#pragma once

#include <cstdint>

#include "tensor/ggml_type.h"

namespace ridge::kernels {

// Whether quantize_row / dequantize_row_quant handle this type (the formats above).
bool can_quantize(GgmlType type);

// Quantizes n floats (n a multiple of the type's block size; CHECKed) into n / block_elems
// blocks at dst. Deterministic: the same input always gives the same bytes, on every ISA.
// Non-finite input yields unspecified (but well-formed, memory-safe) blocks.
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);
// The same with a weight per element (n of them, > 0: an importance matrix's per-column mean
// squared activation), minimizing sum w_i (x_i - x^_i)^2 in the scale searches instead of the
// plain squared error (docs/quantization.md). w == nullptr, or all ones, gives quantize_row's
// bytes. The Q8 formats and MXFP4 have no search: their bytes do not depend on w.
// llama.cpp requires an importance matrix for IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S and IQ3_XXS
// matrices; ridge writes them without one too (plain squared error), at a quality that only an
// importance matrix makes usable.
void quantize_row_weighted(GgmlType type, const float* src, void* dst, int64_t n, const float* w);

// Whether dequantize_row_quant decodes this type: the same formats as can_quantize.
bool can_dequantize(GgmlType type);

// Decodes n elements (a multiple of the block size) of blocks at src into dst.
void dequantize_row_quant(GgmlType type, const void* src, float* dst, int64_t n);

}  // namespace ridge::kernels
