// How long a draft to propose (docs/speculative.md): the length that maximizes the expected
// tokens per unit of time, from the acceptance rate measured so far and the cost of a step that
// verifies k drafts (the cost model's figure relative to a plain decode step: about 1 while the
// step stays bandwidth-bound, more once the extra rows make it compute-bound).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ridge::spec {

// Expected tokens a verification step with k drafts emits when each draft token is accepted with
// probability alpha and a run stops at the first rejection: 1 + alpha + ... + alpha^k.
double expected_tokens(double alpha, int64_t k);

// The k in [0, step_cost.size()) maximizing expected_tokens(alpha, k) / (step_cost[k] + k *
// draft_cost), where step_cost[0] = 1 is a plain step and draft_cost the proposer's time per
// drafted token in the same unit; 0 when no draft beats plain decoding.
int64_t best_draft_length(double alpha, std::span<const double> step_cost, double draft_cost);

// The time of a step verifying k = 0..max drafts relative to a plain step, and the proposer's time
// per drafted token: the cost model's figures until the run has timed a plain step and one of
// that kind, then the measured ratios (decayed averages). On a CPU a step of a few rows costs
// more than the roofline says (another kernel path, a logits row each), and only the timing
// sees it.
class StepCosts {
 public:
  StepCosts(std::vector<double> model_steps, double model_draft);
  void record_step(int64_t k, double seconds);
  void record_draft(int64_t k, double seconds);  // proposing k tokens took `seconds`
  // [0..max]: the measured ratio where known, else the model's.
  const std::vector<double>& steps() const { return current_; }
  double draft() const;
  double model_step(int64_t k) const { return model_[static_cast<size_t>(k)]; }

 private:
  static constexpr double kKeep = 0.8;  // weight of the old average
  std::vector<double> model_, avg_, current_;  // avg_: seconds, 0 = not timed yet
  double model_draft_ = 0, draft_avg_ = 0;
};

// The acceptance rate of draft tokens, from decayed counts and a uniform prior: a step that
// accepted a of k drafted tokens tested a + 1 of them when it rejected one, a when it did not
// (the tokens after a rejection tell nothing).
class AcceptanceRate {
 public:
  void update(int64_t drafted, int64_t accepted);
  double value() const { return (successes_ + 1.0) / (trials_ + 2.0); }

 private:
  static constexpr double kDecay = 0.9;  // per verification step
  double successes_ = 0, trials_ = 0;
};

}  // namespace ridge::spec
