// ThreadScratch: small requests reuse the thread's buffer per slot (no allocation per call), large
// ones are the call's own, every buffer is 64-byte aligned, and a slot cannot be held twice.
#include "base/thread_scratch.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>

namespace ridge {
namespace {

bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(ThreadScratch, SmallRequestsReuseTheSlotAndGrowInPlaceOfIt) {
  void* first = nullptr;
  {
    const ThreadScratch s(kScratchKernelTables, 1000);
    first = s.data();
    ASSERT_TRUE(aligned64(first));
    std::memset(s.data(), 1, 1000);
  }
  {
    const ThreadScratch s(kScratchKernelTables, 500);  // fits: the same buffer
    EXPECT_EQ(s.data(), first);
  }
  {
    const ThreadScratch s(kScratchKernelTables, kThreadScratchBytes);  // grows, then stays
    EXPECT_TRUE(aligned64(s.data()));
    std::memset(s.data(), 2, kThreadScratchBytes);
    first = s.data();
  }
  const ThreadScratch again(kScratchKernelTables, 64);
  EXPECT_EQ(again.data(), first);
}

TEST(ThreadScratch, SlotsAndThreadsAreSeparate) {
  const ThreadScratch a(kScratchActs, 256);
  const ThreadScratch b(kScratchKernelPack, 256);
  EXPECT_NE(a.data(), b.data());
  void* other = nullptr;
  std::thread([&] {
    const ThreadScratch c(kScratchActs, 256);
    other = c.data();
  }).join();
  EXPECT_NE(other, a.data());
}

TEST(ThreadScratch, LargeRequestsAreTheCallsOwn) {
  const ThreadScratch small(kScratchKernelRows, 64);
  const ThreadScratch big(kScratchKernelLanes, kThreadScratchBytes + 1);
  EXPECT_TRUE(aligned64(big.data()));
  std::memset(big.data(), 3, kThreadScratchBytes + 1);
  // A large request does not take the slot: a small one on it still works alongside.
  const ThreadScratch lanes(kScratchKernelLanes, 64);
  EXPECT_NE(lanes.data(), big.data());
}

TEST(ThreadScratchDeathTest, OneSlotHeldTwiceIsAnError) {
  EXPECT_DEATH(
      {
        const ThreadScratch a(kScratchKernelTables, 64);
        const ThreadScratch b(kScratchKernelTables, 64);
      },
      "in_use");
}

}  // namespace
}  // namespace ridge
