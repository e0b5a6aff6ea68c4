#include "base/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace ridge {

void HugeUnmap::operator()(void* p) const {
  if (p != nullptr) munmap(p, bytes);
}

size_t huge_rounded(size_t bytes) {
  if (bytes == 0) bytes = 1;
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

HugeBuffer alloc_huge(size_t bytes) {
  if (bytes > SIZE_MAX - 2 * kHugePageBytes) return HugeBuffer(nullptr, HugeUnmap{});
  const size_t size = huge_rounded(bytes);
  // Map one huge page more than needed, then trim both ends to a 2 MiB-aligned region: mmap
  // only promises 4 KiB alignment, and a huge page needs an aligned 2 MiB range.
  const size_t span = size + kHugePageBytes;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return HugeBuffer(nullptr, HugeUnmap{});
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t tail = aligned + size;
  if (start + span > tail) munmap(reinterpret_cast<void*>(tail), start + span - tail);
  void* p = reinterpret_cast<void*>(aligned);
  (void)madvise(p, size, MADV_HUGEPAGE);  // advice only: without THP the pages stay 4 KiB
  return HugeBuffer(p, HugeUnmap{size});
}

}  // namespace ridge
