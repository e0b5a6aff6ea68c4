#include "sampling/draft_draw.h"

#include "base/check.h"
#include "sampling/argmax.h"
#include "sampling/rng.h"

namespace ridge::sampling {

SamplingParams draft_sampling_params(const SamplingParams& target) {
  SamplingParams p = target;
  uint64_t state = target.seed;
  p.seed = Rng::splitmix64(state);
  return p;
}

DraftDraw::DraftDraw(Sampler* sampler, std::span<const int32_t> text, std::vector<std::vector<TokenProb>>* q)
    : sampler_(sampler), q_(q) {
  RIDGE_CHECK((sampler == nullptr) == (q == nullptr));
  if (q_) q_->clear();
  keep_history_ = sampler_ && sampler_->params().has_penalties();
  if (keep_history_) history_.assign(text.begin(), text.end());
}

int32_t DraftDraw::next(std::span<const float> row) {
  if (!sampler_) return argmax(row);
  const int32_t t = sampler_->sample_draft(row, history_, q_->emplace_back());
  if (keep_history_) history_.push_back(t);
  return t;
}

}  // namespace ridge::sampling
