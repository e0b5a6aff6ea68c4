// Greedy decoding's pick: the lowest index of the largest value.
#pragma once

#include <cstdint>
#include <span>

namespace ridge::sampling {

// The lowest index among the largest values of v, as the scan `if (v[i] > v[best]) best = i`
// gives it: NaNs never win, but a NaN at index 0 is kept (nothing compares greater); 0 when v is
// empty. Two passes a compiler vectorizes (the maximum, then its first index) instead of one
// branch per element: a 152k-entry vocabulary is read once per decoded token.
int32_t argmax(std::span<const float> v);

}  // namespace ridge::sampling
