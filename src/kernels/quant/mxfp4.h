// MXFP4's E8M0 scale as the decoder and the dot products use it (block layout in blocks.h).
// Internal linkage: each translation unit gets its own copy, so an ISA-flagged file that includes
// this cannot hand the linker a copy other code would run.
#pragma once

#include <cstdint>
#include <cstring>

namespace ridge::kernels {
namespace {

// 2^(e - 128): the E8M0 scale 2^(e - 127) halved, because kMxfp4Values holds the E2M1 values
// doubled (ggml's convention; its ggml_e8m0_to_fp32_half). Exact for every e: e >= 2 is a
// normal float with biased exponent e - 1; e = 1 and e = 0 are the subnormals 2^-127 (mantissa
// bit 22) and 2^-128 (bit 21). No NaN: e = 255 gives 2^127.
inline float mxfp4_half_scale(uint8_t e) {
  const uint32_t bits = e >= 2 ? static_cast<uint32_t>(e - 1) << 23 : uint32_t{0x00200000} << e;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace
}  // namespace ridge::kernels
