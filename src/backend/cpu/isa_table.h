// The CPU backend's one dispatch table per ISA (--isa: ref, avx2, avx512): the matmul kernels
// (kernels/registry.cpp's table) and every other loop that has a version per ISA. Each
// implementation file declares its per-ISA functions; only isa_table.cpp chooses among them.
#pragma once

#include <cstdint>

#include "backend/cpu/activations.h"
#include "backend/cpu/attention_kernels.h"
#include "backend/cpu/delta_net.h"
#include "kernels/kernels.h"

namespace ridge::backend::cpu {

struct IsaTable {
  const kernels::Kernels* kernels = nullptr;  // matmul, dequantization, weight layouts
  SwigluFn swiglu = nullptr;
  SiluFn silu = nullptr;
  DeltaRuleFn delta_rule = nullptr;
  // The attention loops for head_dim hd: the widest whose lanes divide hd (avx512: 16, avx2: 8),
  // else the scalar ones.
  const AttnKernels& attention(int64_t hd) const;

  kernels::Isa isa = kernels::Isa::kRef;
};

const IsaTable& isa_table(kernels::Isa isa);

}  // namespace ridge::backend::cpu
