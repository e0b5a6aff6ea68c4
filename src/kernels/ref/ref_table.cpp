#include "kernels/isa_tables.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/quant/quants.h"
#include "kernels/ref/ref_types.h"

namespace ridge::kernels {
namespace {

// Dequantization of the block formats lives with the quantizers (kernels/quant/).
template <GgmlType kType>
void dequantize_quant(const void* src, float* dst, int64_t n) {
  dequantize_row_quant(kType, src, dst, n);
}

template <GgmlType... kTypes>
void add_quant_dequantizers(TypeTable& t) {
  ((can_dequantize(kTypes) ? t.set_dequantize(kTypes, dequantize_quant<kTypes>) : void()), ...);
}

}  // namespace

TypeTable ref_type_table() {
  TypeTable t;
  add_quant_dequantizers<GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                         GgmlType::kQ8_1, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K,
                         GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ8_K,
                         GgmlType::kMXFP4, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kTQ1_0,
                         GgmlType::kTQ2_0, GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS, GgmlType::kIQ2_S,
                         GgmlType::kIQ3_XXS, GgmlType::kIQ3_S, GgmlType::kIQ1_S, GgmlType::kIQ1_M>(t);
  ref::add_float_types(t);
  ref::add_q8_0(t);
  add_quant_rows_ref(t);  // Q4_0 ... Q6_K, MXFP4, IQ4_NL (kernels/quant/quant_tables.cpp)
  return t;
}

}  // namespace ridge::kernels
