// The CPU backend's element-wise activations, one implementation per ISA (the scalar loop, and
// x86_avx2/swiglu.cpp, x86_avx512/swiglu.cpp with a polynomial e^x within a few ulps of it).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace ridge::backend::cpu {

// out[i] = silu(gate[i]) * up[i]  (out may alias gate)
void swiglu(const float* gate, const float* up, float* out, int64_t n);
// The same in AVX-512 and AVX2 lanes (x86_avx512/swiglu.cpp, x86_avx2/swiglu.cpp; a polynomial
// e^x, within a few ulps of swiglu) (isa_table.h picks one).
void swiglu_avx512(const float* gate, const float* up, float* out, int64_t n);
void swiglu_avx2(const float* gate, const float* up, float* out, int64_t n);
using SwigluFn = void (*)(const float* gate, const float* up, float* out, int64_t n);
// x[i] = silu(x[i]) in place; in vector lanes as swiglu.
void silu_inplace(float* x, int64_t n);
void silu_inplace_avx512(float* x, int64_t n);
void silu_inplace_avx2(float* x, int64_t n);
using SiluFn = void (*)(float* x, int64_t n);

}  // namespace ridge::backend::cpu
