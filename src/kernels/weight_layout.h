// Weight layouts other than GGUF's row order (WeightLayout in kernels.h): what their bytes
// mean, the in-place conversion from kRows, and reading one row back.
//
// kPanels16 (Q8_0). Rows 16p .. 16p + 15 form panel p, which keeps the bytes those rows occupy
// in kRows order (16 * row_bytes), so a matrix converts in place. Panel p, block b (the b-th 32
// columns) is kPanelBlockBytes = 16 * 34 bytes at offset 16 p row_bytes + b kPanelBlockBytes:
//   byte 64 g + 4 r + k  (g < 8, r < 16, k < 4) = q[16 p + r][32 b + 4 g + k] XOR 0x80
//   bytes 512 + 2 r, +1                          = fp16 d of row 16 p + r, block b
// i.e. the AVX-512 VNNI kernel's register image (x86_avx512/panel_q8.h): register g holds
// elements 4g .. 4g + 3 of all 16 rows as unsigned bytes q + 128, followed by the 16 scales.
// Reading a panel is then one sequential stream with no transposes. The last rows % 16 rows stay
// in kRows order after the panels.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace ridge::kernels {

inline constexpr int64_t kPanelRows = 16;
inline constexpr int64_t kPanelBlockBytes = kPanelRows * 34;  // one Q8_0 block of 16 rows

// Whether `layout` is defined for `type` (kRows always is).
bool layout_defined(GgmlType type, WeightLayout layout);

// Rewrites a kRows matrix of `rows` x `cols` at `data` into `layout` (layout_defined), in place.
void convert_layout(GgmlType type, WeightLayout layout, uint8_t* data, int64_t rows, int64_t cols);

// Row `row` of `w` (any layout) as f32: dst[0, w.cols). kRows rows go through k.dequantize_row.
void dequantize_weight_row(const Kernels& k, const WeightView& w, int64_t row, float* dst);

}  // namespace ridge::kernels
