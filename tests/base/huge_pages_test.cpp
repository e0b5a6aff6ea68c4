#include "base/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace ridge {
namespace {

TEST(HugePages, AlignedZeroedWritable) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{4096}, kHugePageBytes, kHugePageBytes + 1,
                       size_t{5} * kHugePageBytes + 12345}) {
    HugeBuffer b = alloc_huge(bytes);
    ASSERT_NE(b.get(), nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.get()) % kHugePageBytes, 0u) << bytes;
    // Whole huge pages are mapped: the rounded-up size is what is freed.
    EXPECT_EQ(b.get_deleter().bytes % kHugePageBytes, 0u);
    EXPECT_GE(b.get_deleter().bytes, bytes);
    auto* p = static_cast<uint8_t*>(b.get());
    const size_t n = b.get_deleter().bytes;
    EXPECT_EQ(p[0], 0);
    EXPECT_EQ(p[n - 1], 0);
    std::memset(p, 0xab, n);
    EXPECT_EQ(p[n / 2], 0xab);
  }
}

TEST(HugePages, ImpossibleSizeIsNull) {
  EXPECT_EQ(alloc_huge(SIZE_MAX).get(), nullptr);
  EXPECT_EQ(alloc_huge(SIZE_MAX - kHugePageBytes).get(), nullptr);
}

}  // namespace
}  // namespace ridge
