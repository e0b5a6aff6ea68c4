// Which routine each ISA uses per weight type: the extension point for new types (one line each).
#include "kernels/isa_tables.h"

namespace ridge::kernels {

TypeTable avx2_type_table() {
  TypeTable t = ref_type_table();
  return t;
}

TypeTable avx512_type_table() {
  TypeTable t = avx2_type_table();
  return t;
}

}  // namespace ridge::kernels
