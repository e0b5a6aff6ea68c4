#include "backend/cpu/isa_table.h"

namespace ridge::backend::cpu {

const AttnKernels& IsaTable::attention(int64_t hd) const {
  if (isa == kernels::Isa::kAvx512 && hd % 16 == 0) return attn_kernels_avx512();
  if ((isa == kernels::Isa::kAvx512 || isa == kernels::Isa::kAvx2) && hd % 8 == 0) {
    return attn_kernels_avx2();
  }
  return attn_kernels_ref();
}

const IsaTable& isa_table(kernels::Isa isa) {
  using kernels::Isa;
  switch (isa) {  // each made on first use (kernels_for CHECKs that the CPU has the ISA)
    case Isa::kAvx512: {
      static const IsaTable t{&kernels::kernels_for(Isa::kAvx512), swiglu_avx512, silu_inplace_avx512,
                              delta_rule_avx512, Isa::kAvx512};
      return t;
    }
    case Isa::kAvx2: {
      static const IsaTable t{&kernels::kernels_for(Isa::kAvx2), swiglu_avx2, silu_inplace_avx2,
                              delta_rule_avx2, Isa::kAvx2};
      return t;
    }
    case Isa::kRef:
      break;
  }
  static const IsaTable ref{&kernels::kernels_for(Isa::kRef), swiglu, silu_inplace,
                            delta_rule_sequential, Isa::kRef};
  return ref;
}

}  // namespace ridge::backend::cpu
