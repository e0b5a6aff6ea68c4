// Per-type reference routines, one file per family, collected by ref_type_table().
#pragma once

#include "kernels/matmul_driver.h"

namespace ridge::kernels::ref {

void add_float_types(TypeTable& t);  // F32, F16, BF16 (ref_float.cpp)
void add_q8_0(TypeTable& t);         // Q8_0 (ref_q8_0.cpp)

}  // namespace ridge::kernels::ref
