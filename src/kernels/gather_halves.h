// The 16-bit field at byte `at` of each of several rows' blocks, packed four to a 64-bit word
// (row 4k + i in bits 16i .. 16i + 15 of word k), for the panel kernels to widen into one vector
// (x86_avx2/direct_panel.h: 8 rows, x86_avx512/panel_q8.h: 16). Scalar loads assembled in general
// registers: on Zen 4 a vpgatherdd costs about as much as the rest of a Q4_0 block, and 8 or 16
// narrow stores read back as a vector miss store-to-load forwarding. No intrinsics: plain code
// shared by the ISA files (internal linkage, one copy per file).
#pragma once

#include <cstdint>
#include <cstring>

namespace ridge::kernels {
namespace {

template <int kWords>
inline __attribute__((always_inline)) void gather_halves(const uint8_t* const* row, int64_t at,
                                                         uint64_t (&q)[kWords]) {
  for (int k = 0; k < kWords; ++k) {
    q[k] = 0;
    for (int i = 0; i < 4; ++i) {
      uint16_t h;
      std::memcpy(&h, row[4 * k + i] + at, 2);
      q[k] |= static_cast<uint64_t>(h) << (16 * i);
    }
  }
}

}  // namespace
}  // namespace ridge::kernels
