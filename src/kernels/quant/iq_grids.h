// ggml's grid codebooks (kernels/quant/iq_grids.cpp): entry k of a grid holds the magnitudes of 8
// (IQ2, IQ1: signed -1/0/+1) or 4 (IQ3) consecutive elements, one byte each, element 0 lowest.
#pragma once

#include <array>
#include <cstdint>

namespace ridge::kernels {

extern const std::array<uint64_t, 256> kIq2XxsGrid;   // bytes 8, 25, 43
extern const std::array<uint64_t, 512> kIq2XsGrid;    // bytes 8, 25, 43
extern const std::array<uint64_t, 1024> kIq2SGrid;    // bytes 8, 25, 43
extern const std::array<uint32_t, 256> kIq3XxsGrid;   // bytes 4, 12, ..., 52, 62
extern const std::array<uint32_t, 512> kIq3SGrid;     // bytes 1, 3, ..., 15
extern const std::array<uint64_t, 2048> kIq1SGrid;    // int8 -1, 0, +1 (IQ1_S and IQ1_M)
// kSignBytes[s]: byte e is 0xff where bit e of s is set (element e negative), else 0.
extern const std::array<uint64_t, 256> kSignBytes;

// ggml's ksigns_iq2xs: the 7 stored sign bits of a group of 8 and the eighth that makes the count
// of negative elements even.
inline constexpr uint8_t even_signs(uint32_t seven) {
  seven &= 127;
  return static_cast<uint8_t>(seven | ((__builtin_popcount(seven) & 1) << 7));
}
// kEvenSignBytes[s] = kSignBytes[even_signs(s)] for the 7 stored bits s.
extern const std::array<uint64_t, 128> kEvenSignBytes;

}  // namespace ridge::kernels
