// MXFP4 quantizer: the bytes of ggml's quantize_row_mxfp4_ref (what llama-quantize writes), so a
// file ridge writes is the file llama.cpp writes. Per 32-element block:
//  - amax = the largest |x| (NaN never wins); e = floor(log2(amax)) - 2 + 127, or 0 for amax 0:
//    amax / 2^(e - 127) lies in [4, 8), so the largest magnitude lands in the top E2M1 octave
//    (4 or 6, or clamps to 6). log2 is the C library's log2f, as in ggml: near a power of two it
//    may round up to the integer, which moves e by one; calling the same function keeps the bytes.
//  - ggml converts that float to uint8_t directly. For amax < 2^-125 the value is negative (-1 at
//    2^-126, down to -24 for the smallest subnormal) and for amax = inf it is inf: out of range,
//    where x86 (cvttss2si) gives the low byte of the int32 result or of 0x80000000. We compute
//    those bytes explicitly (255 ... 232, and 0), so such blocks match too.
//  - each element takes the first code (0 ... 15) with the smallest |kMxfp4Values[q] * d - x|,
//    d = 2^(e - 128) the halved scale, in f32 as ggml evaluates it: ties go to the lower code
//    (e.g. x = d/2 between 0 and d gives code 0, and -0 gives code 0).
#include <cmath>
#include <cstdint>

#include "kernels/quant/blocks.h"
#include "kernels/quant/mxfp4.h"
#include "kernels/quant/quantize_impl.h"

namespace ridge::kernels {
namespace {

// The exponent byte of a block whose largest magnitude is amax (never NaN: see the amax loop).
uint8_t mxfp4_exponent(float amax) {
  if (!(amax > 0.0f)) return 0;
  const float f = std::floor(std::log2(amax)) - 2.0f + 127.0f;  // an integer in [-24, 253], or inf
  // x86's float -> int32 conversion: out of range (inf) gives 0x80000000, whose low byte is 0.
  const int32_t i = f < 2147483648.0f ? static_cast<int32_t>(f) : INT32_MIN;
  return static_cast<uint8_t>(static_cast<uint32_t>(i) & 0xffu);
}

// The code whose value is nearest x, the lowest on ties; x NaN gives 0.
uint8_t mxfp4_code(float x, float d) {
  uint8_t best = 0;
  float best_err = std::fabs(static_cast<float>(kMxfp4Values[0]) * d - x);
  for (uint8_t q = 1; q < 16; ++q) {
    const float err = std::fabs(static_cast<float>(kMxfp4Values[q]) * d - x);
    if (err < best_err) {
      best = q;
      best_err = err;
    }
  }
  return best;
}

}  // namespace

void quantize_mxfp4(const float* x, void* dst, int64_t nb) {
  auto* b = static_cast<BlockMxfp4*>(dst);
  for (int64_t i = 0; i < nb; ++i, x += kQk) {
    float amax = 0.0f;
    for (int j = 0; j < kQk; ++j) {
      const float a = std::fabs(x[j]);
      if (amax < a) amax = a;
    }
    const uint8_t e = mxfp4_exponent(amax);
    const float d = mxfp4_half_scale(e);
    b[i].e = e;
    for (int j = 0; j < kQk / 2; ++j) {
      b[i].qs[j] = static_cast<uint8_t>(mxfp4_code(x[j], d) | (mxfp4_code(x[j + 16], d) << 4));
    }
  }
}

}  // namespace ridge::kernels
