#include "base/check.h"
#include "kernels/quant/quantize_impl.h"
#include "kernels/quant/quants.h"

namespace ridge::kernels {

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
  quantize_row_weighted(type, src, dst, n, nullptr);
}

void quantize_row_weighted(GgmlType type, const float* src, void* dst, int64_t n, const float* w) {
  RIDGE_CHECK(can_quantize(type));
  const int64_t qk = traits(type).block_elems;
  RIDGE_CHECK(n >= 0 && n % qk == 0);
  const int64_t nb = n / qk;
  switch (type) {
    case GgmlType::kQ4_0: return quantize_q4_0(src, dst, nb, w);
    case GgmlType::kQ4_1: return quantize_q4_1(src, dst, nb, w);
    case GgmlType::kQ5_0: return quantize_q5_0(src, dst, nb, w);
    case GgmlType::kQ5_1: return quantize_q5_1(src, dst, nb, w);
    case GgmlType::kQ8_0: return quantize_q8_0(src, dst, nb);
    case GgmlType::kQ8_1: return quantize_q8_1(src, dst, nb);
    case GgmlType::kQ2_K: return quantize_q2_k(src, dst, nb, w);
    case GgmlType::kQ3_K: return quantize_q3_k(src, dst, nb, w);
    case GgmlType::kQ4_K: return quantize_q4_k(src, dst, nb, w);
    case GgmlType::kQ5_K: return quantize_q5_k(src, dst, nb, w);
    case GgmlType::kQ6_K: return quantize_q6_k(src, dst, nb, w);
    case GgmlType::kQ8_K: return quantize_q8_k(src, dst, nb);
    case GgmlType::kMXFP4: return quantize_mxfp4(src, dst, nb);
    case GgmlType::kIQ4_NL: return quantize_iq4_nl(src, dst, nb, w);
    case GgmlType::kIQ4_XS: return quantize_iq4_xs(src, dst, nb, w);
#define RIDGE_GRID_CASE(T, F, n) \
  case GgmlType::k##T:           \
    return quantize_##n(src, dst, nb, w);
    RIDGE_GRID_FORMATS(RIDGE_GRID_CASE)
#undef RIDGE_GRID_CASE
    default: RIDGE_CHECK(false && "unreachable");
  }
}

}  // namespace ridge::kernels
