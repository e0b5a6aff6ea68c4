// The cost model of a named preset under a weight type (a ggml type or a llama.cpp mixture), and a
// named hardware entry.
#pragma once

#include <gtest/gtest.h>

#include "analysis/hardware.h"
#include "model/config.h"
#include "model/cost.h"
#include "offline/presets.h"
#include "offline/weight_types.h"

namespace ridge::model::testing {

inline ModelCost cost_of(const char* preset, const char* type, kv::KvType kv = kv::KvType::kF16) {
  auto cfg = offline::preset_config(preset);
  EXPECT_TRUE(cfg.ok()) << cfg.status().message();
  auto fn = offline::weight_types_by_name(type, *cfg);
  EXPECT_TRUE(fn.ok()) << fn.status().message();
  auto m = model_cost(*cfg, *fn, kv);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return *m;
}

}  // namespace ridge::model::testing

namespace ridge::analysis::testing {

inline Hardware hw(const char* name) {
  auto h = find_hardware(name, {}, std::nullopt);
  EXPECT_TRUE(h.ok()) << h.status().message();
  return *h;
}

}  // namespace ridge::analysis::testing
