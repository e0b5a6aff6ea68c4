#include "spec/draft_length.h"

#include <algorithm>
#include <utility>

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

StepCosts::StepCosts(std::vector<double> model_steps, double model_draft)
    : model_(std::move(model_steps)), avg_(model_.size(), 0.0), current_(model_), model_draft_(model_draft) {}

void StepCosts::record_step(int64_t k, double seconds) {
  if (k < 0 || k >= static_cast<int64_t>(avg_.size()) || !(seconds > 0)) return;
  double& a = avg_[static_cast<size_t>(k)];
  a = a > 0 ? kKeep * a + (1 - kKeep) * seconds : seconds;
  if (avg_[0] <= 0) return;
  for (size_t i = 0; i < avg_.size(); ++i) current_[i] = avg_[i] > 0 ? avg_[i] / avg_[0] : model_[i];
}

void StepCosts::record_draft(int64_t k, double seconds) {
  if (k <= 0 || !(seconds > 0)) return;
  const double per_token = seconds / static_cast<double>(k);
  draft_avg_ = draft_avg_ > 0 ? kKeep * draft_avg_ + (1 - kKeep) * per_token : per_token;
}

double StepCosts::draft() const {
  return draft_avg_ > 0 && !avg_.empty() && avg_[0] > 0 ? draft_avg_ / avg_[0] : model_draft_;
}

std::vector<int64_t> allocate_drafts(std::span<const double> alpha, std::span<const int64_t> max_len,
                                     double n_tokens, int64_t max_total,
                                     const std::function<double(int64_t)>& step_time) {
  struct Term {
    double gain;
    size_t seq;
  };
  std::vector<Term> terms;
  for (size_t i = 0; i < alpha.size(); ++i) {
    double g = 1;
    for (int64_t j = 0; j < max_len[i]; ++j) terms.push_back({g *= alpha[i], i});
  }
  // Within a sequence the terms fall with j, so a stable sort keeps each sequence's in order.
  std::stable_sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return a.gain > b.gain; });
  terms.resize(std::min(terms.size(), static_cast<size_t>(std::max<int64_t>(0, max_total))));
  size_t best = 0;
  double best_rate = n_tokens / step_time(0), tokens = n_tokens;
  for (size_t k = 1; k <= terms.size(); ++k) {
    tokens += terms[k - 1].gain;
    const double rate = tokens / step_time(static_cast<int64_t>(k));
    if (rate > best_rate) {
      best = k;
      best_rate = rate;
    }
  }
  std::vector<int64_t> out(alpha.size(), 0);
  for (size_t k = 0; k < best; ++k) out[terms[k].seq] += 1;
  return out;
}

double StepTimes::ratio(double rows) const {
  if (w_ <= 0) return 1.0;
  const double mx = sx_ / w_, my = sy_ / w_;
  const double var = sxx_ / w_ - mx * mx;
  const double slope = var > kMinVariance ? std::max(0.0, (sxy_ / w_ - mx * my) / var) : 0.0;
  return std::max(my + slope * (rows - mx), 0.25 * my);
}

void StepTimes::record(int64_t rows, double seconds, double model) {
  if (rows <= 0 || !(seconds > 0) || !(model > 0)) return;
  const auto x = static_cast<double>(rows);
  double y = seconds / model;
  if (w_ > 0) {  // one slow step (the machine was busy) moves the line by a bounded amount
    const double predicted = ratio(x);
    y = std::clamp(y, 0.5 * predicted, 2.0 * predicted);
  }
  w_ = kKeep * w_ + 1;
  sx_ = kKeep * sx_ + x;
  sy_ = kKeep * sy_ + y;
  sxx_ = kKeep * sxx_ + x * x;
  sxy_ = kKeep * sxy_ + x * y;
}

double StepTimes::estimate(int64_t rows, double model) const {
  return model * ratio(static_cast<double>(rows));
}

void AcceptanceRate::update(int64_t drafted, int64_t accepted) {
  successes_ = kDecay * successes_ + static_cast<double>(accepted);
  trials_ = kDecay * trials_ + static_cast<double>(accepted + (accepted < drafted ? 1 : 0));
}

}  // namespace ridge::spec
