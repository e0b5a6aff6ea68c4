#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sampling/argmax.h"

namespace ridge::sampling {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

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

void Sampler::process_logits(std::span<const float> logits, std::span<const int32_t> history,
                             std::span<const uint8_t> allowed) {
  RIDGE_CHECK(logits.size() == static_cast<size_t>(n_vocab_));
  std::copy(logits.begin(), logits.end(), work_.begin());
  if (!allowed.empty()) {
    RIDGE_CHECK(allowed.size() == static_cast<size_t>(n_vocab_));
    const float ban = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < allowed.size(); ++i) {
      if (allowed[i] == 0) work_[i] = ban;
    }
  }
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
  using detail::Candidate;
  kept_.clear();
  // Top-k on the processed logits: a positive temperature does not change their order.
  const bool sorted = params_.top_k > 0 && params_.top_k < n_vocab_;
  if (sorted) {
    detail::select_top_k(work_, params_.top_k, kept_);
  } else {
    for (size_t i = 0; i < work_.size(); ++i) {
      if (work_[i] > kNegInf) kept_.push_back({static_cast<int32_t>(i), work_[i], 0.0f});
    }
  }
  if (kept_.empty()) return 0.0;

  float max_logit = kNegInf;
  for (const Candidate& c : kept_) max_logit = std::max(max_logit, c.logit);
  // Scaled logits relative to the top token (<= 0) and their weights exp(x) in (0, 1].
  double total = 0.0;
  for (Candidate& c : kept_) {
    c.logit = (c.logit - max_logit) / params_.temperature;
    c.weight = std::exp(c.logit);
    total += c.weight;
  }
  // Both cuts keep a prefix of the descending order, so applying them as an intersection is the
  // sequence top-p then min-p: min-p compares with the top token, which renormalization by top-p
  // does not change. min-p in log space: p_i >= min_p * p_max  <=>  x_i >= log(min_p).
  if (params_.min_p > 0.0f) {
    const auto threshold = static_cast<float>(std::log(static_cast<double>(params_.min_p)));
    std::erase_if(kept_, [&](const Candidate& c) { return c.logit < threshold; });
  }
  if (params_.top_p < 1.0f) {
    detail::keep_top_p(kept_, static_cast<double>(params_.top_p) * total, sorted, scratch_);
  }
  total = 0.0;
  for (const Candidate& c : kept_) total += c.weight;
  return total;
}

int32_t Sampler::draw(double total) {
  const double target = rng_.uniform() * total;
  double cum = 0.0;
  for (const detail::Candidate& c : kept_) {
    cum += c.weight;
    if (target < cum) return c.id;
  }
  // Rounding left target at the very top: the last candidate with a weight (an exp() may
  // underflow to 0, and a token of probability 0 is never drawn).
  for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {
    if (it->weight > 0.0f) return it->id;
  }
  return kept_.back().id;
}

int32_t Sampler::pick(std::span<const float> logits, std::span<const int32_t> history,
                      std::span<const uint8_t> allowed) {
  // Plain greedy decoding needs no processed copy of the logits (a 600 KB copy per token on a
  // 152k vocabulary).
  if (params_.greedy() && params_.logit_bias.empty() && !params_.has_penalties() &&
      allowed.empty()) {
    RIDGE_CHECK(logits.size() == static_cast<size_t>(n_vocab_));
    return argmax(logits);
  }
  process_logits(logits, history, allowed);
  if (params_.greedy()) return argmax(work_);
  const double total = truncate();
  if (total == 0.0) return argmax(work_);  // every token banned: lowest id, deterministic
  return draw(total);
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history,
                        std::span<const uint8_t> allowed) {
  return pick(logits, history, allowed);
}

SampleResult Sampler::sample_with_logprobs(std::span<const float> logits,
                                           std::span<const int32_t> history, int32_t n_top,
                                           std::span<const uint8_t> allowed) {
  const int32_t token = pick(logits, history, allowed);
  return logprobs_of(logits, token, n_top);
}

double Sampler::process_and_truncate(std::span<const float> logits, std::span<const int32_t> history) {
  process_logits(logits, history);
  return params_.greedy() ? 0.0 : truncate();
}

void Sampler::kept_distribution(double total, std::vector<TokenProb>& out) const {
  out.clear();
  out.reserve(kept_.size());
  for (const detail::Candidate& c : kept_) out.push_back({c.id, static_cast<float>(c.weight / total)});
}

std::vector<TokenProb> Sampler::distribution(std::span<const float> logits,
                                             std::span<const int32_t> history) {
  const double total = process_and_truncate(logits, history);
  if (total == 0.0) return {{argmax(work_), 1.0f}};  // greedy, or every token banned
  std::vector<TokenProb> out;
  kept_distribution(total, out);
  return out;
}

int32_t Sampler::sample_draft(std::span<const float> logits, std::span<const int32_t> history,
                              std::vector<TokenProb>& q) {
  const double total = process_and_truncate(logits, history);
  if (total == 0.0) {
    const int32_t t = argmax(work_);
    q.assign(1, {t, 1.0f});
    return t;
  }
  kept_distribution(total, q);
  return draw(total);
}

int32_t Sampler::verify_draft(std::span<const float> logits, std::span<const int32_t> history,
                              int32_t x, std::span<const TokenProb> q) {
  const std::vector<TokenProb> p = distribution(logits, history);
  q_dense_.resize(static_cast<size_t>(n_vocab_), 0.0f);
  for (const TokenProb& tp : q) {
    RIDGE_CHECK(tp.token >= 0 && tp.token < n_vocab_);
    q_dense_[static_cast<size_t>(tp.token)] = tp.prob;
  }
  RIDGE_CHECK(x >= 0 && x < n_vocab_);
  const double qx = q_dense_[static_cast<size_t>(x)];
  RIDGE_CHECK(qx > 0.0);
  double px = 0.0;
  for (const TokenProb& tp : p) {
    if (tp.token == x) px = tp.prob;
  }
  int32_t out = x;
  if (rng_.uniform() * qx >= px) {  // rejected: u >= p(x) / q(x)
    const auto residual = [&](const TokenProb& tp) {
      return std::max(0.0, static_cast<double>(tp.prob) - q_dense_[static_cast<size_t>(tp.token)]);
    };
    double total = 0.0;
    for (const TokenProb& tp : p) total += residual(tp);
    if (total > 0.0) {  // p == q up to rounding leaves nothing to draw from: x stands
      const double target = rng_.uniform() * total;
      double cum = 0.0;
      for (const TokenProb& tp : p) {
        const double r = residual(tp);
        if (r <= 0.0) continue;
        out = tp.token;
        cum += r;
        if (target < cum) break;
      }
    }
  }
  for (const TokenProb& tp : q) q_dense_[static_cast<size_t>(tp.token)] = 0.0f;
  return out;
}

SampleResult logprobs_of(std::span<const float> logits, int32_t token, int32_t n_top) {
  RIDGE_CHECK(token >= 0 && static_cast<size_t>(token) < logits.size());
  float max_logit = kNegInf;
  for (float l : logits) max_logit = std::max(max_logit, l);
  double sum = 0.0;
  if (max_logit > kNegInf) {
    for (float l : logits) sum += std::exp(l - max_logit);
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
    std::vector<detail::Candidate> best;
    detail::select_top_k(logits, n_top, best);
    for (const detail::Candidate& c : best) out.top.push_back({c.id, logprob(c.logit)});
  }
  return out;
}

}  // namespace ridge::sampling
