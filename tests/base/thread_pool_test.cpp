#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace ridge {
namespace {

TEST(ThreadPool, RunsEveryIndexOnce) {
  for (int n : {1, 2, 3, 5}) {
    ThreadPool pool(n);
    EXPECT_EQ(pool.size(), n);
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::atomic<int> bad_nth{0};
    pool.run([&](int ith, int nth) {
      if (nth != n) bad_nth.fetch_add(1);
      hits[static_cast<size_t>(ith)].fetch_add(1);
    });
    EXPECT_EQ(bad_nth.load(), 0);
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, ManyRegionsComplete) {
  // Each region must see the writes of the previous one: run() returns only when all finished.
  ThreadPool pool(3);
  std::vector<int64_t> data(3, 0);
  for (int rep = 0; rep < 500; ++rep) {
    pool.run([&](int ith, int) { data[static_cast<size_t>(ith)] += ith + 1; });
  }
  EXPECT_EQ(data[0], 500);
  EXPECT_EQ(data[1], 1000);
  EXPECT_EQ(data[2], 1500);
}

TEST(ThreadPool, UsesDistinctThreads) {
  ThreadPool pool(2);
  std::thread::id ids[2];
  pool.run([&](int ith, int) { ids[ith] = std::this_thread::get_id(); });
  EXPECT_EQ(ids[0], std::this_thread::get_id());  // the caller is worker 0
  EXPECT_NE(ids[0], ids[1]);
}

TEST(ThreadPool, SurvivesIdleSleep) {
  // Workers fall back to sleeping after their spin; a later region must still wake them.
  ThreadPool pool(2, /*pin=*/true);
  std::atomic<int> count{0};
  pool.run([&](int, int) { count.fetch_add(1); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  pool.run([&](int, int) { count.fetch_add(1); });
  EXPECT_EQ(count.load(), 4);
}

TEST(SplitRange, CoversExactlyOnceInGrains) {
  for (int64_t n : {0, 1, 7, 16, 130, 1001}) {
    for (int nth : {1, 2, 3, 8}) {
      for (int64_t grain : {1, 4, 16}) {
        int64_t next = 0;
        for (int ith = 0; ith < nth; ++ith) {
          const Range r = split_range(n, ith, nth, grain);
          EXPECT_EQ(r.begin, next);
          EXPECT_LE(r.begin, r.end);
          if (r.end < n) {
            EXPECT_EQ(r.end % grain, 0) << n << " " << nth << " " << grain;
          }
          next = r.end;
        }
        EXPECT_EQ(next, n);
      }
    }
  }
}

TEST(SplitRange, Balanced) {
  const Range a = split_range(100, 0, 2);
  const Range b = split_range(100, 1, 2);
  EXPECT_EQ(a.end - a.begin, 50);
  EXPECT_EQ(b.end - b.begin, 50);
}

}  // namespace
}  // namespace ridge
