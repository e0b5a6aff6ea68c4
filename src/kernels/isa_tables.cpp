// Which routine each ISA uses per weight type: the extension point for new types (one line each).
#include "kernels/isa_tables.h"

#include "kernels/quant/quant_rows.h"
#include "kernels/x86_avx2/avx2.h"
#include "kernels/x86_avx512/avx512.h"

namespace ridge::kernels {

TypeTable avx2_type_table() {
  TypeTable t = ref_type_table();
  add_quant_rows_avx2(t);  // quantized formats (kernels/quant/quant_tables.cpp)
  t.set(GgmlType::kF32, {avx2::rows_f32, ActFormat::kF32, avx2::kFloatRowGrain});
  t.set(GgmlType::kF16, {avx2::rows_f16, ActFormat::kF32AsF16, avx2::kFloatRowGrain});
  t.set(GgmlType::kBF16, {avx2::rows_bf16, ActFormat::kF32AsBf16, avx2::kFloatRowGrain});
  t.set(GgmlType::kQ8_0, {avx2::rows_q8_0, ActFormat::kQ8_0, avx2::kQ8_0RowGrain});
  t.quantize_q8_0 = avx2::quantize_act_row_q8_0;
  t.quantize_q8_k = avx2::quantize_act_row_q8_k;
  return t;
}

TypeTable avx512_type_table() {
  TypeTable t = avx2_type_table();
  add_quant_rows_avx512(t);
  t.set(GgmlType::kF32, {avx512::rows_f32, ActFormat::kF32, avx512::kFloatRowGrain});
  t.set(GgmlType::kF16, {avx512::rows_f16, ActFormat::kF32AsF16, avx512::kFloatRowGrain});
  t.set(GgmlType::kBF16, {avx512::rows_bf16, ActFormat::kF32AsBf16, avx512::kFloatRowGrain});
  t.set(GgmlType::kQ8_0, {avx512::rows_q8_0, ActFormat::kQ8_0, avx512::kQ8_0RowGrain,
                          WeightLayout::kPanels16});
  t.quantize_q8_0 = avx512::quantize_act_row_q8_0;
  t.quantize_q8_k = avx512::quantize_act_row_q8_k;
  return t;
}

}  // namespace ridge::kernels
