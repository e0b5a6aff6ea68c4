// engine::Session: one sequence on a ModelRunner of its own, its pool owned or lent, its backend
// chosen by name.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "engine/session.h"
#include "model/test_util.h"

namespace ridge::engine {
namespace {

std::vector<float> prompt_logits(Session& s) {
  const std::vector<int32_t> tokens = {3, 99, 7, 250, 18, 41};
  auto r = s.eval(tokens, /*all_logits=*/true);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::vector<float>(r->begin(), r->end()) : std::vector<float>{};
}

TEST(Session, ALentPoolGivesTheLogitsOfAnOwnedOne) {
  const model::Model& m = model::testing::cached_tiny("tiny-qwen3", 3);
  SessionOptions o;
  o.n_ctx = 32;
  o.max_outputs = 8;
  o.n_threads = 2;
  auto owned = Session::create(m, o);
  ASSERT_TRUE(owned.ok()) << owned.status().message();
  ThreadPool pool(2);
  auto lent = Session::create(m, o, lend_pool(pool));
  ASSERT_TRUE(lent.ok()) << lent.status().message();
  EXPECT_EQ(&lent->pool(), &pool);
  EXPECT_NE(&owned->pool(), &pool);
  const std::vector<float> a = prompt_logits(*owned), b = prompt_logits(*lent);
  ASSERT_EQ(a.size(), 6u * 512u);
  EXPECT_TRUE(a == b);
}

TEST(Session, RefusesWhatItCannotRun) {
  const model::Model& m = model::testing::cached_tiny("tiny-qwen3", 3);
  SessionOptions o;
  o.n_ctx = 32;
  ThreadPool big(2);
  auto s = Session::create(m, o, lend_pool(big));  // 2 threads lent to a session of 1
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("a pool of 2 threads lent to a session of 1"), std::string::npos)
      << s.status().message();
  o.backend = "no-such-device";
  s = Session::create(m, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("unknown backend 'no-such-device' (registered: cpu"), std::string::npos)
      << s.status().message();
  o.backend = "cpu";
  o.kv_type = kv::KvType::kFP8;
  s = Session::create(m, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("fp8 needs a GPU backend"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace ridge::engine
