// Overflow-checked size arithmetic for anything derived from untrusted counts.
#pragma once

#include <cstdint>
#include <optional>

namespace ridge {

inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Rounds `x` up to a multiple of `align` (align > 0); nullopt on overflow.
inline std::optional<uint64_t> checked_align_up(uint64_t x, uint64_t align) {
  auto sum = checked_add(x, align - 1);
  if (!sum) return std::nullopt;
  return *sum / align * align;
}

}  // namespace ridge
