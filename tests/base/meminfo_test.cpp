#include "base/meminfo.h"

#include <gtest/gtest.h>

namespace ridge {
namespace {

TEST(Meminfo, ReadsKnownFieldsAndZeroForOthers) {
  const uint64_t total = meminfo_bytes("MemTotal");
  if (total == 0) GTEST_SKIP() << "no /proc/meminfo here";
  EXPECT_GT(total, uint64_t{64} << 20);
  const uint64_t avail = meminfo_bytes("MemAvailable");
  EXPECT_GT(avail, 0u);
  EXPECT_LE(avail, total);
  EXPECT_EQ(meminfo_bytes("MemTota"), 0u);  // a prefix is not the field
  EXPECT_EQ(meminfo_bytes("NoSuchField"), 0u);
}

}  // namespace
}  // namespace ridge
