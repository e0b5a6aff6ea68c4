// The TypeTable of each ISA. Built in plain (no ISA flags) translation units from the routines
// exported by the ISA directories, so no code compiled with ISA flags runs before CPUID says so.
#pragma once

#include "kernels/matmul_driver.h"

namespace ridge::kernels {

TypeTable ref_type_table();     // ref/ref_table.cpp
TypeTable avx2_type_table();    // isa_tables.cpp
TypeTable avx512_type_table();  // isa_tables.cpp

}  // namespace ridge::kernels
