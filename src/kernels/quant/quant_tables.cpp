// Registration of the quantized-format rows routines (ISA-neutral translation unit: it only
// stores function pointers, so no ISA-flagged code runs before the registry checks CPUID).
#include "kernels/quant/grid_formats.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/x86_avx512/avx512.h"

namespace ridge::kernels {

void add_quant_rows_ref(TypeTable& t) {
  t.set(GgmlType::kQ4_0, {quant_ref::rows_q4_0, ActFormat::kQ8_0, 1});
  t.set(GgmlType::kQ4_1, {quant_ref::rows_q4_1, ActFormat::kQ8_1, 1});
  t.set(GgmlType::kQ5_0, {quant_ref::rows_q5_0, ActFormat::kQ8_0, 1});
  t.set(GgmlType::kQ5_1, {quant_ref::rows_q5_1, ActFormat::kQ8_1, 1});
  t.set(GgmlType::kQ2_K, {quant_ref::rows_q2_k, ActFormat::kQ8_K, 1});
  t.set(GgmlType::kQ3_K, {quant_ref::rows_q3_k, ActFormat::kQ8_K, 1});
  t.set(GgmlType::kQ4_K, {quant_ref::rows_q4_k, ActFormat::kQ8_K, 1});
  t.set(GgmlType::kQ5_K, {quant_ref::rows_q5_k, ActFormat::kQ8_K, 1});
  t.set(GgmlType::kQ6_K, {quant_ref::rows_q6_k, ActFormat::kQ8_K, 1});
  t.set(GgmlType::kMXFP4, {quant_ref::rows_mxfp4, ActFormat::kQ8_0, 1});
  t.set(GgmlType::kIQ4_NL, {quant_ref::rows_iq4_nl, ActFormat::kQ8_0, 1});
  t.set(GgmlType::kIQ4_XS, {quant_ref::rows_iq4_xs, ActFormat::kQ8_K, 1});
  for (GgmlType g : kGridFormats) t.set(g, {quant_ref::grid_rows(g), ActFormat::kQ8_K, 1});
}

void add_quant_rows_avx2(TypeTable& t) {
  t.set(GgmlType::kQ4_0, {quant_avx2::rows_q4_0, ActFormat::kQ8_0, 1});
  t.set(GgmlType::kQ4_K, {quant_avx2::rows_q4_k, ActFormat::kQ8_K, 8});
  t.set(GgmlType::kQ5_K, {quant_avx2::rows_q5_k, ActFormat::kQ8_K, 8});
  t.set(GgmlType::kQ6_K, {quant_avx2::rows_q6_k, ActFormat::kQ8_K, 8});
  t.set(GgmlType::kQ4_1, {quant_avx2::rows_q4_1, ActFormat::kQ8_1, 1});
  t.set(GgmlType::kQ5_0, {quant_avx2::rows_q5_0, ActFormat::kQ8_0, 1});
  t.set(GgmlType::kQ5_1, {quant_avx2::rows_q5_1, ActFormat::kQ8_1, 1});
  t.set(GgmlType::kQ2_K, {quant_avx2::rows_q2_k, ActFormat::kQ8_K, 8});
  t.set(GgmlType::kQ3_K, {quant_avx2::rows_q3_k, ActFormat::kQ8_K, 8});
  t.set(GgmlType::kMXFP4, {quant_avx2::rows_mxfp4, ActFormat::kQ8_0, quant_avx2::kMxfp4Grain});
  t.set(GgmlType::kIQ4_NL, {quant_avx2::rows_iq4_nl, ActFormat::kQ8_0, quant_avx2::kMxfp4Grain});
  t.set(GgmlType::kIQ4_XS, {quant_avx2::rows_iq4_xs, ActFormat::kQ8_K, quant_avx2::kMxfp4Grain});
#define RIDGE_GRID_AVX2(T, F, n) t.set(GgmlType::k##T, {quant_avx2::rows_##n, ActFormat::kQ8_K, quant_avx2::kMxfp4Grain});
  RIDGE_GRID_FORMATS(RIDGE_GRID_AVX2)
#undef RIDGE_GRID_AVX2
}

void add_quant_rows_avx512(TypeTable& t) {
  constexpr WeightLayout kPanels = WeightLayout::kPanels16;
  t.set(GgmlType::kQ4_0, {avx512::rows_q4_0, ActFormat::kQ8_0, avx512::kQ8_0RowGrain, kPanels});
  t.set(GgmlType::kQ4_1, {avx512::rows_q4_1, ActFormat::kQ8_1, avx512::kQ8_0RowGrain, kPanels});
  t.set(GgmlType::kQ5_0, {avx512::rows_q5_0, ActFormat::kQ8_0, avx512::kQ8_0RowGrain, kPanels});
  t.set(GgmlType::kQ5_1, {avx512::rows_q5_1, ActFormat::kQ8_1, avx512::kQ8_0RowGrain, kPanels});
  t.set(GgmlType::kQ2_K, {quant_avx512::rows_q2_k, ActFormat::kQ8_K, 16, WeightLayout::kPanels16});
  t.set(GgmlType::kQ3_K, {quant_avx512::rows_q3_k, ActFormat::kQ8_K, 16, WeightLayout::kPanels16});
  t.set(GgmlType::kQ4_K, {quant_avx512::rows_q4_k, ActFormat::kQ8_K, 16, WeightLayout::kPanels16});
  t.set(GgmlType::kQ5_K, {quant_avx512::rows_q5_k, ActFormat::kQ8_K, 16, WeightLayout::kPanels16});
  t.set(GgmlType::kQ6_K, {quant_avx512::rows_q6_k, ActFormat::kQ8_K, 16, WeightLayout::kPanels16});
  t.set(GgmlType::kMXFP4, {avx512::rows_mxfp4, ActFormat::kQ8_0, avx512::kQ8_0RowGrain, kPanels});
  t.set(GgmlType::kIQ4_NL, {avx512::rows_iq4_nl, ActFormat::kQ8_0, avx512::kQ8_0RowGrain, kPanels});
  t.set(GgmlType::kIQ4_XS, {quant_avx512::rows_iq4_xs, ActFormat::kQ8_K, 16, kPanels});
#define RIDGE_GRID_AVX512(T, F, n) t.set(GgmlType::k##T, {quant_avx512::rows_##n, ActFormat::kQ8_K, 16});
  RIDGE_GRID_FORMATS(RIDGE_GRID_AVX512)
#undef RIDGE_GRID_AVX512
}

}  // namespace ridge::kernels
