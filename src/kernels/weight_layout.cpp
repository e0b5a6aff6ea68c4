#include "kernels/weight_layout.h"

#include <cstring>
#include <vector>

#include "base/check.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

constexpr int64_t kQ8Block = 34;  // fp16 d + 32 int8

void panels16_from_rows(uint8_t* data, int64_t rows, int64_t cols) {
  const int64_t nb = cols / 32;
  const auto row_bytes = static_cast<size_t>(nb * kQ8Block);
  std::vector<uint8_t> rows_copy(kPanelRows * row_bytes);
  for (int64_t p = 0; p < rows / kPanelRows; ++p) {
    uint8_t* panel = data + static_cast<size_t>(p) * kPanelRows * row_bytes;
    std::memcpy(rows_copy.data(), panel, rows_copy.size());
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* out = panel + b * kPanelBlockBytes;
      for (int64_t r = 0; r < kPanelRows; ++r) {
        const uint8_t* blk = rows_copy.data() + r * row_bytes + b * kQ8Block;
        std::memcpy(out + 512 + 2 * r, blk, 2);
        for (int g = 0; g < 8; ++g) {
          for (int k = 0; k < 4; ++k) out[64 * g + 4 * r + k] = blk[2 + 4 * g + k] ^ 0x80;
        }
      }
    }
  }
}

void panels16_row(const WeightView& w, int64_t row, float* dst) {
  const auto* panel = static_cast<const uint8_t*>(w.data) +
                      static_cast<uint64_t>(row / kPanelRows) * kPanelRows * w.row_bytes;
  const int64_t r = row % kPanelRows;
  for (int64_t b = 0; b < w.cols / 32; ++b) {
    const uint8_t* blk = panel + b * kPanelBlockBytes;
    uint16_t h;
    std::memcpy(&h, blk + 512 + 2 * r, 2);
    const float d = fp16_to_f32(h);
    for (int g = 0; g < 8; ++g) {
      for (int k = 0; k < 4; ++k) {
        const auto q = static_cast<int8_t>(blk[64 * g + 4 * r + k] ^ 0x80);
        dst[32 * b + 4 * g + k] = static_cast<float>(q) * d;  // ref's dequantize: q * d
      }
    }
  }
}

}  // namespace

bool layout_defined(GgmlType type, WeightLayout layout) {
  return layout == WeightLayout::kRows ||
         (layout == WeightLayout::kPanels16 && type == GgmlType::kQ8_0);
}

void convert_layout(GgmlType type, WeightLayout layout, uint8_t* data, int64_t rows, int64_t cols) {
  RIDGE_CHECK(layout_defined(type, layout) && rows >= 0 && cols % 32 == 0);
  if (layout == WeightLayout::kPanels16) panels16_from_rows(data, rows, cols);
}

void dequantize_weight_row(const Kernels& k, const WeightView& w, int64_t row, float* dst) {
  RIDGE_CHECK(row >= 0 && row < w.rows);
  if (w.layout == WeightLayout::kPanels16 && row < w.rows / kPanelRows * kPanelRows) {
    panels16_row(w, row, dst);
    return;
  }
  k.dequantize_row(w.type, static_cast<const uint8_t*>(w.data) + static_cast<uint64_t>(row) * w.row_bytes,
                   dst, w.cols);
}

}  // namespace ridge::kernels
