// Reference decoding and Q8_K dot of the grid formats (kernels/quant/grid_formats.h states the
// rules): every block unpacked to GridBlock, then ggml's float operations.
#include "base/check.h"
#include "kernels/quant/grid_formats.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/quant/rounded.h"

namespace ridge::kernels {
namespace {

// x_e for the 16 elements of scale ls, in ggml's order of float operations.
template <GridScaleRule kRule>
void decode16(float d, int ls, const int8_t* q, float* y) {
  float db = 0.0f;
  if constexpr (kRule == GridScaleRule::kHalfQuarter) db = d * (0.5f + static_cast<float>(ls / 2)) * 0.25f;
  if constexpr (kRule == GridScaleRule::kHalfHalf) db = d * (0.5f + static_cast<float>(ls / 2)) * 0.5f;
  if constexpr (kRule == GridScaleRule::kOdd || kRule == GridScaleRule::kOddEighth) db = d * static_cast<float>(ls);
  for (int e = 0; e < 16; ++e) {
    if constexpr (kRule == GridScaleRule::kOddEighth) {
      y[e] = db * (static_cast<float>(q[e]) * 0.125f);  // g + delta / 8, exact
    } else {
      y[e] = db * static_cast<float>(q[e]);
    }
  }
}

template <typename F>
void dequant(const void* src, float* y, int64_t nb) {
  const auto* b = static_cast<const typename F::Block*>(src);
  GridBlock u;
  for (int64_t i = 0; i < nb; ++i) {
    F::unpack(b[i], u);
    for (int s = 0; s < kQkK / 16; ++s, y += 16) decode16<F::kRule>(u.d, u.ls[s], u.q + 16 * s, y);
  }
}

// The exact integer sum_s ls[s] * sum_{e in s} q_e x_e of one super-block.
int32_t block_isum(const GridBlock& u, const int8_t* x) {
  int32_t isum = 0;
  for (int s = 0; s < kQkK / 16; ++s) {
    int32_t part = 0;
    for (int e = 16 * s; e < 16 * s + 16; ++e) part += u.q[e] * x[e];
    isum += u.ls[s] * part;
  }
  return isum;
}

template <typename F>
void rows(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  const int64_t nb = a.cols / kQkK;
  RIDGE_CHECK(w.row_bytes == static_cast<uint64_t>(nb) * sizeof(typename F::Block));
  GridBlock u;
  for (int64_t j = j0; j < j1; ++j) {
    const auto* wr = reinterpret_cast<const typename F::Block*>(static_cast<const uint8_t*>(w.data) + j * w.row_bytes);
    for (int64_t i = 0; i < a.m; ++i) {
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        F::unpack(wr[b], u);
        const float dd = (u.d * F::kUnit) * a.q8k_d[i * nb + b];
        acc += rounded(dd * static_cast<float>(block_isum(u, a.q8_qs + i * a.cols + b * kQkK)));
      }
      y[i * ldy + j] = acc;
    }
  }
}

}  // namespace

void dequantize_grid(GgmlType type, const void* src, float* dst, int64_t nb) {
  const bool known = with_grid_format(type, [&](auto f) { dequant<decltype(f)>(src, dst, nb); });
  RIDGE_CHECK(known);
}

namespace quant_ref {
MatmulRowsFn grid_rows(GgmlType type) {
  MatmulRowsFn fn = nullptr;
  with_grid_format(type, [&](auto f) { fn = rows<decltype(f)>; });
  return fn;
}
}  // namespace quant_ref

}  // namespace ridge::kernels
