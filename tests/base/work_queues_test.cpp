#include "base/work_queues.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "base/thread_pool.h"

namespace ridge {
namespace {

// Every unit of every owner is run exactly once, whatever the sizes (empty queues included).
TEST(WorkQueues, RunsEveryUnitOnce) {
  for (int nth : {1, 2, 3, 9}) {  // 9: more threads than the inline slots
    ThreadPool pool(nth);
    for (int64_t per : {0, 1, 5, 64, 1000}) {
      WorkQueues q(nth);
      std::vector<std::vector<std::atomic<int>>> hits(static_cast<size_t>(nth));
      for (int i = 0; i < nth; ++i) {
        const int64_t n = per + i;  // ragged
        q.set(i, n);
        hits[static_cast<size_t>(i)] = std::vector<std::atomic<int>>(static_cast<size_t>(n));
      }
      std::atomic<int> bad{0};
      pool.run([&](int ith, int) {
        q.drain(ith, [&](int owner, int64_t u0, int64_t u1) {
          if (owner < 0 || owner >= nth || u0 >= u1) bad.fetch_add(1);
          for (int64_t u = u0; u < u1; ++u) hits[static_cast<size_t>(owner)][static_cast<size_t>(u)].fetch_add(1);
        });
      });
      EXPECT_EQ(bad.load(), 0);
      for (int i = 0; i < nth; ++i) {
        for (auto& h : hits[static_cast<size_t>(i)]) ASSERT_EQ(h.load(), 1) << "nth " << nth << " per " << per;
      }
    }
  }
}

// A thread that stalls on its first chunk leaves the rest of its queue to the other thread,
// taken from the back, while it still runs its own front.
TEST(WorkQueues, IdleThreadTakesAStalledThreadsWork) {
  ThreadPool pool(2);
  WorkQueues q(2);
  constexpr int64_t kUnits = 64;
  q.set(0, kUnits);
  q.set(1, kUnits);
  std::vector<std::atomic<int>> ran_by(2 * kUnits);  // owner * kUnits + unit -> thread + 1
  std::atomic<bool> stalled{false};
  pool.run([&](int ith, int) {
    bool first = true;
    q.drain(ith, [&](int owner, int64_t u0, int64_t u1) {
      if (ith == 1 && first) {  // thread 1 holds its first chunk 200 ms (slack for a busy CI)
        stalled.store(true);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      while (ith == 0 && !stalled.load()) std::this_thread::yield();  // ... once it has one
      first = false;
      for (int64_t u = u0; u < u1; ++u) ran_by[static_cast<size_t>(owner * kUnits + u)].store(ith + 1);
    });
  });
  int stolen = 0;
  for (int64_t u = 0; u < kUnits; ++u) {
    EXPECT_NE(ran_by[static_cast<size_t>(u)].load(), 0);
    const int who = ran_by[static_cast<size_t>(kUnits + u)].load();
    EXPECT_NE(who, 0);
    stolen += who == 1;
  }
  EXPECT_EQ(ran_by[static_cast<size_t>(kUnits)].load(), 2) << "the owner keeps its front";
  EXPECT_EQ(ran_by[static_cast<size_t>(2 * kUnits - 1)].load(), 1) << "the back is taken";
  EXPECT_GT(stolen, kUnits / 2);  // thread 1 ran only its first quarter before thread 0 took the rest
}

}  // namespace
}  // namespace ridge
