#include "spec/draft_length.h"

#include <algorithm>

namespace ridge::spec {

double expected_tokens(double alpha, int64_t k) {
  double sum = 0, term = 1;
  for (int64_t i = 0; i <= k; ++i, term *= alpha) sum += term;
  return sum;
}

int64_t best_draft_length(double alpha, std::span<const double> step_cost, double draft_cost) {
  int64_t best = 0;
  double best_rate = step_cost.empty() ? 1.0 : 1.0 / step_cost[0];
  for (int64_t k = 1; k < static_cast<int64_t>(step_cost.size()); ++k) {
    const double rate = expected_tokens(alpha, k) / (step_cost[static_cast<size_t>(k)] + static_cast<double>(k) * draft_cost);
    if (rate > best_rate) {
      best = k;
      best_rate = rate;
    }
  }
  return best;
}

void AcceptanceRate::update(int64_t drafted, int64_t accepted) {
  successes_ = kDecay * successes_ + static_cast<double>(accepted);
  trials_ = kDecay * trials_ + static_cast<double>(accepted + (accepted < drafted ? 1 : 0));
}

}  // namespace ridge::spec
