// Memory for the large arrays every decode step streams (weights, KV cache), advised into
// transparent huge pages.
//
// Why: with 4 KiB pages a stream crosses a page every 64 cache lines, and each crossing costs a
// TLB miss (a two-level walk under a hypervisor) and stops the hardware prefetcher, which does
// not follow a stream across a page. With 2 MiB pages neither happens within a matrix. `ridge
// probe` measures its roof on huge-page memory, so weights read from 4 KiB pages could not reach
// that roof. Where THP is off ("never") the advice is ignored and the memory is ordinary.
#pragma once

#include <cstddef>
#include <memory>

namespace ridge {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

struct HugeUnmap {
  size_t bytes = 0;
  void operator()(void* p) const;
};
// Owns an anonymous mapping made by alloc_huge (zero-filled on first touch).
using HugeBuffer = std::unique_ptr<void, HugeUnmap>;

// `bytes` (rounded up to whole huge pages), aligned to kHugePageBytes and advised into huge
// pages; null when the system cannot map that much.
HugeBuffer alloc_huge(size_t bytes);
// The bytes alloc_huge maps for `bytes` (whole huge pages; at least one).
size_t huge_rounded(size_t bytes);

}  // namespace ridge
