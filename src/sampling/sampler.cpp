#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ridge::sampling {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Lowest id among the largest values.
int32_t argmax(std::span<const float> v) {
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] > v[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

// First size of the sorted head when top_p / min_p search the untruncated vocabulary; most
// distributions are cut within it, so a 150k vocabulary is not sorted in full.
constexpr size_t kFirstHead = 64;

}  // namespace

Result<Sampler> Sampler::create(const SamplingParams& params, int32_t n_vocab) {
  RIDGE_RETURN_IF_ERROR(params.validate(n_vocab));
  return Sampler(params, n_vocab);
}

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab)
    : params_(params), n_vocab_(n_vocab), rng_(params.seed) {
  RIDGE_CHECK(params_.validate(n_vocab).ok());
  work_.resize(static_cast<size_t>(n_vocab));
}

void Sampler::process_logits(std::span<const float> logits, std::span<const int32_t> history) {
  RIDGE_CHECK(logits.size() == static_cast<size_t>(n_vocab_));
  std::copy(logits.begin(), logits.end(), work_.begin());
  for (const auto& [token, bias] : params_.logit_bias) work_[static_cast<size_t>(token)] += bias;
  if (!params_.has_penalties()) return;

  size_t n_window = history.size();
  if (params_.penalty_last_n >= 0) {
    n_window = std::min(n_window, static_cast<size_t>(params_.penalty_last_n));
  }
  window_.clear();
  for (int32_t t : history.subspan(history.size() - n_window)) {
    if (t >= 0 && t < n_vocab_) window_.push_back(t);
  }
  std::sort(window_.begin(), window_.end());
  // Each distinct token is penalized once, by its count in the window.
  for (size_t i = 0; i < window_.size();) {
    size_t j = i;
    while (j < window_.size() && window_[j] == window_[i]) ++j;
    float& l = work_[static_cast<size_t>(window_[i])];
    if (params_.repetition_penalty != 1.0f) {
      l = l > 0.0f ? l / params_.repetition_penalty : l * params_.repetition_penalty;
    }
    l -= static_cast<float>(j - i) * params_.frequency_penalty + params_.presence_penalty;
    i = j;
  }
}

double Sampler::truncate() {
  const float temperature = params_.temperature;
  kept_.clear();
  for (size_t i = 0; i < work_.size(); ++i) {
    if (work_[i] > kNegInf) kept_.push_back({static_cast<int32_t>(i), work_[i] / temperature});
  }
  weights_.clear();
  if (kept_.empty()) return 0.0;

  // A strict total order, so every selection below has one answer on every platform.
  const auto before = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  const size_t n = kept_.size();
  size_t n_sorted = 0;
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
    const auto k = static_cast<ptrdiff_t>(params_.top_k);
    std::nth_element(kept_.begin(), kept_.begin() + k, kept_.end(), before);
    kept_.resize(static_cast<size_t>(k));
    std::sort(kept_.begin(), kept_.end(), before);
    n_sorted = kept_.size();
  }
  float max_logit = kNegInf;
  for (const Candidate& c : kept_) max_logit = std::max(max_logit, c.logit);

  const bool cut_p = params_.top_p < 1.0f;
  const bool cut_min = params_.min_p > 0.0f;
  if (cut_p || cut_min) {
    double total = 0.0;
    for (const Candidate& c : kept_) total += std::exp(static_cast<double>(c.logit - max_logit));
    // Walk the distribution in descending order, sorting only as far as the walk goes. Both
    // rules keep a prefix of that order; min-p is relative to the top probability, so the
    // renormalization by top-p does not change which tokens it keeps.
    const double p_mass = static_cast<double>(params_.top_p) * total;
    size_t n_keep = kept_.size();
    double cum = 0.0;
    for (size_t i = 0; i < kept_.size(); ++i) {
      if (i == n_sorted) {
        const size_t head = std::min(kept_.size(), std::max(kFirstHead, 4 * n_sorted));
        auto first = kept_.begin() + static_cast<ptrdiff_t>(n_sorted);
        auto last = kept_.begin() + static_cast<ptrdiff_t>(head);
        if (last != kept_.end()) std::nth_element(first, last, kept_.end(), before);
        std::sort(first, last, before);
        n_sorted = head;
      }
      const double e = std::exp(static_cast<double>(kept_[i].logit - max_logit));
      if (cut_min && e < static_cast<double>(params_.min_p)) {
        n_keep = i;  // i >= 1: the top token has e == 1 >= min_p
        break;
      }
      cum += e;
      if (cut_p && cum >= p_mass) {
        n_keep = i + 1;
        break;
      }
    }
    kept_.resize(n_keep);
  }
  double total = 0.0;
  weights_.reserve(kept_.size());
  for (const Candidate& c : kept_) {
    const double e = std::exp(static_cast<double>(c.logit - max_logit));
    weights_.push_back(e);
    total += e;
  }
  return total;
}

int32_t Sampler::draw(double total) {
  const double target = rng_.uniform() * total;
  double cum = 0.0;
  for (size_t i = 0; i < kept_.size(); ++i) {
    cum += weights_[i];
    if (target < cum) return kept_[i].id;
  }
  return kept_.back().id;  // rounding left target at the very top
}

int32_t Sampler::pick(std::span<const float> logits, std::span<const int32_t> history) {
  process_logits(logits, history);
  if (params_.greedy()) return argmax(work_);
  const double total = truncate();
  if (total == 0.0) return argmax(work_);  // every token banned: lowest id, deterministic
  return draw(total);
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  return pick(logits, history);
}

SampleResult Sampler::sample_with_logprobs(std::span<const float> logits,
                                           std::span<const int32_t> history, int32_t n_top) {
  const int32_t token = pick(logits, history);
  return logprobs_of(logits, token, n_top);
}

std::vector<TokenProb> Sampler::distribution(std::span<const float> logits,
                                             std::span<const int32_t> history) {
  process_logits(logits, history);
  if (params_.greedy()) return {{argmax(work_), 1.0f}};
  const double total = truncate();
  if (total == 0.0) return {{argmax(work_), 1.0f}};
  std::vector<TokenProb> out;
  out.reserve(kept_.size());
  for (size_t i = 0; i < kept_.size(); ++i) {
    out.push_back({kept_[i].id, static_cast<float>(weights_[i] / total)});
  }
  return out;
}

SampleResult logprobs_of(std::span<const float> logits, int32_t token, int32_t n_top) {
  RIDGE_CHECK(token >= 0 && static_cast<size_t>(token) < logits.size());
  RIDGE_CHECK(n_top >= 0 && static_cast<size_t>(n_top) <= logits.size());
  float max_logit = kNegInf;
  for (float l : logits) max_logit = std::max(max_logit, l);
  double sum = 0.0;
  if (max_logit > kNegInf) {
    for (float l : logits) sum += std::exp(static_cast<double>(l - max_logit));
  }
  // log-sum-exp; with every logit -inf each log-probability is -inf.
  const double lse = max_logit > kNegInf ? max_logit + std::log(sum) : 0.0;
  const auto logprob = [&](float l) {
    return max_logit > kNegInf ? static_cast<float>(l - lse) : kNegInf;
  };

  SampleResult out;
  out.token = token;
  out.logprob = logprob(logits[static_cast<size_t>(token)]);
  if (n_top > 0) {
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    const auto before = [&](int32_t a, int32_t b) {
      const float la = logits[static_cast<size_t>(a)];
      const float lb = logits[static_cast<size_t>(b)];
      return la > lb || (la == lb && a < b);
    };
    std::partial_sort(ids.begin(), ids.begin() + n_top, ids.end(), before);
    out.top.reserve(static_cast<size_t>(n_top));
    for (int32_t i = 0; i < n_top; ++i) {
      const int32_t id = ids[static_cast<size_t>(i)];
      out.top.push_back({id, logprob(logits[static_cast<size_t>(id)])});
    }
  }
  return out;
}

}  // namespace ridge::sampling
