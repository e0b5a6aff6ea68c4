#include "analysis/read_pass.h"

#include <gtest/gtest.h>

#include <cmath>

#include "analysis/probe_loops.h"

namespace ridge::analysis {
namespace {

TEST(ReadPassTest, ReadsTheWholeBufferOnceWithTheBestVariant) {
  for (int n_threads : {1, 2}) {
    ThreadPool pool(n_threads);
    auto r = ReadPass::create(pool, uint64_t{8} << 20, 1);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_GT(r->bytes(), uint64_t{7} << 20);
    EXPECT_LE(r->bytes(), uint64_t{8} << 20);
    bool known = false;
    for (const auto& v : probe_read_variants()) known = known || probe_loop_name(v, false) == r->loop_name();
    EXPECT_TRUE(known) << r->loop_name();
    for (int pass = 0; pass < 2; ++pass) {
      const double rate = r->run(pool);
      EXPECT_TRUE(std::isfinite(rate));
      EXPECT_GT(rate, 1e8);  // 0.1 GB/s: anything slower is not a read of memory
      EXPECT_EQ(r->last_sum(), static_cast<double>(r->bytes() / sizeof(float)));
    }
  }
}

TEST(ReadPassTest, RefusesTooSmallABufferAndNoCalibration) {
  ThreadPool pool(2);
  auto tiny = ReadPass::create(pool, 1024);
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.status().message().find("too small"), std::string::npos) << tiny.status().message();
  auto none = ReadPass::create(pool, uint64_t{8} << 20, 0);
  EXPECT_FALSE(none.ok());
  auto isa = ReadPass::create(pool, uint64_t{8} << 20, 1, "sse9");
  EXPECT_FALSE(isa.ok());
}

}  // namespace
}  // namespace ridge::analysis
