// engine::Session with a window ring (the sliding-window layers' K/V in window blocks reused
// round the ring): the logits of a session that keeps every position, bit for bit, through a
// chunked prompt, decoding and truncations within the slack; a truncation into overwritten
// blocks starts over and then gives a fresh session's logits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/session.h"
#include "model/test_util.h"
#include "tiny_model.h"

namespace ridge::engine {
namespace {

std::vector<int32_t> tokens(int n, int salt) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back((salt + 37 * i) % 500);
  return t;
}

Session make(const model::Model& m, bool swa_full) {
  SessionOptions o;
  o.n_ctx = 1024;
  o.max_batch = 16;
  o.n_threads = 2;
  o.swa_full = swa_full;
  auto s = Session::create(m, o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(s).value();
}

// The prompt in one eval (chunks of 16), then greedy steps; every step's logits.
std::vector<std::vector<float>> run(Session& s, const std::vector<int32_t>& prompt, int steps) {
  std::vector<std::vector<float>> out;
  auto r = s.eval(prompt);
  EXPECT_TRUE(r.ok()) << r.status().message();
  for (int i = 0; i < steps && r.ok(); ++i) {
    out.emplace_back(r->begin(), r->end());
    const int32_t next = model::testing::argmax(*r);
    r = s.eval(std::vector<int32_t>{next});
    EXPECT_TRUE(r.ok()) << r.status().message();
  }
  return out;
}

class SessionWindow : public ::testing::TestWithParam<const char*> {};

TEST_P(SessionWindow, RingGivesTheLogitsOfKeepingEveryPosition) {
  const model::Model& m = model::testing::cached_tiny(GetParam(), 3);
  Session full = make(m, true), ring = make(m, false);
  EXPECT_EQ(full.n_window_blocks(), 0);
  // Window 8, steps of 16 and 256 positions of slack in blocks of 16: 20 of the 64 blocks.
  EXPECT_EQ(ring.n_window_blocks(), 20);
  const std::vector<int32_t> prompt = tokens(600, 5);  // wraps the ring twice
  EXPECT_EQ(run(full, prompt, 40), run(ring, prompt, 40));
  // Back 30 positions (within the slack): both keep them and go on alike.
  EXPECT_EQ(full.truncate(full.n_past() - 30), ring.truncate(ring.n_past() - 30));
  EXPECT_EQ(run(full, tokens(20, 9), 10), run(ring, tokens(20, 9), 10));
  // Back to position 100: the ring has overwritten its blocks, so it starts over at 0.
  EXPECT_EQ(full.truncate(100), 100);
  EXPECT_EQ(ring.truncate(100), 0);
  Session fresh = make(m, false);
  const std::vector<int32_t> again = tokens(300, 11);
  EXPECT_EQ(run(ring, again, 10), run(fresh, again, 10));
}

INSTANTIATE_TEST_SUITE_P(Presets, SessionWindow, ::testing::Values("tiny-gemma3", "tiny-gpt-oss", "tiny-gemma4"),
                         testing::PresetName());

}  // namespace
}  // namespace ridge::engine
