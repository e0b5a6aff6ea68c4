// How long a draft to propose (docs/speculative.md): the length that maximizes the expected
// tokens per unit of time, from the acceptance rate measured so far and the cost of a step that
// verifies k drafts (the cost model's figure relative to a plain decode step: about 1 while the
// step stays bandwidth-bound, more once the extra rows make it compute-bound).
#pragma once

#include <cstdint>
#include <functional>
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

// Drafts for a batch (the engine's continuous batching, docs/speculative.md): each sequence i may
// verify up to max_len[i] drafted tokens, each accepted with probability alpha[i]; `step_time(K)`
// is the time of the step with K draft rows in all (any unit; step_time(0) > 0) and n_tokens the
// tokens the step emits without drafts. The j-th draft of sequence i adds alpha[i]^j expected
// tokens, so the best K rows are the K largest such terms; the K chosen maximizes expected
// tokens per unit of time, and K = 0 (speculation off) when no draft pays, as at batch sizes
// where the step is compute-bound; K stays within max_total. Returns the draft length per
// sequence.
std::vector<int64_t> allocate_drafts(std::span<const double> alpha, std::span<const int64_t> max_len,
                                     double n_tokens, int64_t max_total,
                                     const std::function<double(int64_t)>& step_time);

// Measured step times by row count, to correct the cost model where a CPU's step costs more
// than the roofline says: estimate() scales the model's time for `rows` by the measured/model
// ratio on the line fitted (decayed least squares, never falling with rows) through the steps
// timed so far. A CPU's step grows about linearly with its rows once its matmuls are
// compute-bound, which the roofline's flat bandwidth-bound part does not say. Until steps of
// two row counts are timed the line is flat: rows look as cheap as the model says, and the
// first drafts measure them.
class StepTimes {
 public:
  void record(int64_t rows, double seconds, double model);
  double estimate(int64_t rows, double model) const;

 private:
  static constexpr double kKeep = 0.95;         // weight of the old sums per record
  static constexpr double kMinVariance = 0.05;  // of the row counts, for a slope
  double ratio(double rows) const;
  double w_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;
};

}  // namespace ridge::spec
