// The logits a round-trip test compares between the original model and the converted one: every
// position of `tokens` in one session (at most 6 outputs kept, 16 positions of context).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "engine/session.h"
#include "model/model.h"

namespace ridge::checkpoint::testing {

inline std::vector<float> logits_of(const model::Model& m, const std::vector<int32_t>& tokens) {
  engine::SessionOptions o;
  o.n_ctx = 16;
  o.max_outputs = 6;
  auto s = engine::Session::create(m, o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  auto r = s->eval(tokens, /*all_logits=*/true);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::vector<float>(r->begin(), r->end()) : std::vector<float>{};
}

}  // namespace ridge::checkpoint::testing
