// Helpers shared by the model tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "model/session.h"

namespace ridge::model::testing {

inline std::string shared_path(const std::string& rel) {
  return std::string(RIDGE_SHARED_DIR) + "/" + rel;
}

inline std::string stories_path() { return shared_path("models/stories260K/stories260K.gguf"); }

inline const kernels::Kernels& test_kernels() { return kernels::kernels_for(kernels::best_isa()); }

// Index of the largest value (lowest index on ties), as greedy decoding picks it.
inline int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace ridge::model::testing
