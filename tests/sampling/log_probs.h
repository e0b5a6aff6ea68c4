// Log-probabilities from probabilities, for building sampler inputs in tests.
#pragma once

#include <cmath>
#include <vector>

namespace ridge::testing {

inline std::vector<float> log_of(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

}  // namespace ridge::testing
