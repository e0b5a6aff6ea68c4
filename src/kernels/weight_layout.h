// Weight layouts other than GGUF's row order (WeightLayout in kernels.h): what their bytes
// mean, the in-place conversion from kRows, and reading one row back.
//
// kPanels16 (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, every K format, IQ4_NL, IQ4_XS and MXFP4). Rows
// 16p .. 16p + 15 form panel p, which keeps the bytes those rows occupy in kRows order
// (16 * row_bytes), so a matrix converts in place. Within a panel, block b (the b-th block of
// every row: 32 elements for Q8_0, 256 for Q4_K) takes 16 * block-bytes at offset
// b * 16 * block-bytes, and each of its fields is stored for all 16 rows side by side: lane r
// of a 64-byte group holds row r's 4 bytes, as the AVX-512 kernels' registers do.
//   Q8_0 (34 bytes: fp16 d, 32 int8 q):  byte 64 g + 4 r + k = q[4 g + k] XOR 0x80 (g < 8, the
//        unsigned form the VNNI kernel multiplies), then bytes 512 + 2 r, +1 = d.
//   Q4_0, Q4_1, Q5_0, Q5_1 (d, m with a min, qh in the 5-bit ones, then 16 qs bytes; IQ4_NL is
//        Q4_0's block): byte 64 k + 4 r + j = qs[4 k + j] (k < 4), then the 5-bit formats' qh
//        at 256 + 4 r, then at 256 (or 320 with qh) d | m << 16 as 4 bytes (with a min) or d as
//        2 (at + 2 r).
//   Q4_K (144 bytes: d, dmin, 12 scale bytes, 128 nibble bytes): byte 64 (8 c + t) + 4 r + k =
//        qs[32 c + 4 t + k] (c < 4, t < 8), then 64 q + 4 r + k at 2048 = scale byte 4 q + k
//        (q < 3), then 2240 + 4 r + k = byte k of d | dmin.
//   Q5_K (176 bytes: d, dmin, 12 scale bytes, 32 qh bytes, 128 nibble bytes): the qs bytes as
//        Q4_K's, then 2048 + 64 t + 4 r + k = qh[4 t + k] (t < 8), the scale bytes at 2560 and
//        d | dmin at 2752.
//   Q6_K (210 bytes: 128 ql, 64 qh, 16 int8 scales, d): byte 64 g + 4 r + k = ql[4 g + k] (g < 32),
//        then 2048 + 64 g + 4 r + k = qh[4 g + k] (g < 16), 3072 + 64 q + 4 r + k = scale 4 q + k
//        (q < 4), and 3328 + 2 r = d.
//   Q2_K (84 bytes: 16 scale bytes, 64 qs bytes, d, dmin): byte 64 g + 4 r + k = qs[4 g + k]
//        (g < 16), then 1024 + 64 q + 4 r + k = scale byte 4 q + k (q < 4), and 1280 + 4 r + k =
//        byte k of d | dmin.
//   Q3_K (110 bytes: 32 hmask bytes, 64 qs bytes, 12 scale bytes, d): byte 64 g + 4 r + k =
//        qs[4 g + k] (g < 16), then 1024 + 64 t + 4 r + k = hmask[4 t + k] (t < 8),
//        1536 + 64 q + 4 r + k = scale byte 4 q + k (q < 3), and 1728 + 2 r = d.
//   IQ4_XS (136 bytes: d, scales_h, 4 scales_l bytes, 128 nibble bytes): byte 64 g + 4 r + k =
//        qs[4 g + k] (g < 32), then 2048 + 4 r + k = scales_l[k], and 2112 + 4 r + k = byte k of
//        d | scales_h << 16.
//   MXFP4 (17 bytes: exponent e, 16 qs bytes): byte 64 k + 4 r + j = qs[4 k + j] (k < 4), then
//        256 + r = e.
// A panel then reads as one sequential stream and needs no transposes. The last rows % 16 rows
// stay in kRows order after the panels.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace ridge::kernels {

inline constexpr int64_t kPanelRows = 16;

// Whether `layout` is defined for `type` (kRows always is).
bool layout_defined(GgmlType type, WeightLayout layout);

// Rewrites a kRows matrix of `rows` x `cols` at `data` into `layout` (layout_defined), in place.
void convert_layout(GgmlType type, WeightLayout layout, uint8_t* data, int64_t rows, int64_t cols);

// Row `row` of `w` (any layout) as f32: dst[0, w.cols), through k.dequantize_row.
void dequantize_weight_row(const Kernels& k, const WeightView& w, int64_t row, float* dst);

// For a rows routine handed [j0, j1) (j0 a multiple of kPanelRows) of a kPanels16 matrix: calls
// on_panels(j0, mid, panel_bytes) for the rows stored in full panels, then on_rows(mid, j1) for
// the kRows tail (either range may be empty).
template <typename OnPanels, typename OnRows>
void split_panels16(const WeightView& w, int64_t j0, int64_t j1, const OnPanels& on_panels,
                    const OnRows& on_rows) {
  const int64_t panels_end = w.rows / kPanelRows * kPanelRows;
  const int64_t mid = j1 < panels_end ? j1 : (j0 > panels_end ? j0 : panels_end);
  if (j0 < mid) on_panels(j0, mid, static_cast<uint64_t>(kPanelRows) * w.row_bytes);
  if (mid < j1) on_rows(mid, j1);
}

}  // namespace ridge::kernels
