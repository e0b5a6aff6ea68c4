// Reference matmul and dequantization for the plain float weight types (F32, F16, BF16).
// Accumulates each dot product in double, in k order: the most accurate simple specification,
// against which the SIMD kernels' f32 lane-parallel sums are compared with a tolerance.
#include <cstring>

#include "kernels/ref/ref_types.h"
#include "tensor/fp16.h"

namespace ridge::kernels::ref {
namespace {

inline float load(const float* p) { return *p; }
struct F16Elem {
  uint16_t bits;
};
struct Bf16Elem {
  uint16_t bits;
};
inline float load(const F16Elem* p) { return fp16_to_f32(p->bits); }
inline float load(const Bf16Elem* p) { return bf16_to_f32(p->bits); }

template <typename Elem>
void rows_float(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y,
                int64_t ldy) {
  for (int64_t j = j0; j < j1; ++j) {
    const auto* wr = reinterpret_cast<const Elem*>(static_cast<const uint8_t*>(w.data) +
                                                   static_cast<uint64_t>(j) * w.row_bytes);
    for (int64_t i = 0; i < a.m; ++i) {
      const float* xr = a.f32 + i * a.ldx;
      double acc = 0.0;
      for (int64_t k = 0; k < a.cols; ++k) {
        acc += static_cast<double>(xr[k]) * static_cast<double>(load(wr + k));
      }
      y[i * ldy + j] = static_cast<float>(acc);
    }
  }
}

template <typename Elem>
void dequantize_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const Elem*>(src);
  for (int64_t k = 0; k < n; ++k) dst[k] = load(s + k);
}

}  // namespace

void add_float_types(TypeTable& t) {
  t.set(GgmlType::kF32, {rows_float<float>, ActFormat::kF32, 1});
  t.set(GgmlType::kF16, {rows_float<F16Elem>, ActFormat::kF32AsF16, 1});
  t.set(GgmlType::kBF16, {rows_float<Bf16Elem>, ActFormat::kF32AsBf16, 1});
  t.set_dequantize(GgmlType::kF32, dequantize_float<float>);
  t.set_dequantize(GgmlType::kF16, dequantize_float<F16Elem>);
  t.set_dequantize(GgmlType::kBF16, dequantize_float<Bf16Elem>);
}

}  // namespace ridge::kernels::ref
