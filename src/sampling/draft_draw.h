// The draft side of speculative sampling: a draft model's successive draft tokens after a text,
// greedy, or drawn by a sampler whose distributions the target's verification needs
// (Sampler::sample_draft / verify_draft, docs/speculative.md).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/params.h"
#include "sampling/sampler.h"

namespace ridge::sampling {

// The draft sampler's settings for a target sampler's: the same, on a seed of their own.
SamplingParams draft_sampling_params(const SamplingParams& target);

class DraftDraw {
 public:
  // sampler null: greedy drafts (q must be null too). Else each draft is drawn by it with the
  // text and the drafts so far as history (copied only when its penalties read one), and the
  // distribution it was drawn from is appended to *q, which starts empty.
  DraftDraw(Sampler* sampler, std::span<const int32_t> text, std::vector<std::vector<TokenProb>>* q);

  // The next draft token from the draft model's logits row.
  int32_t next(std::span<const float> row);

 private:
  Sampler* sampler_;
  std::vector<std::vector<TokenProb>>* q_;
  bool keep_history_ = false;
  std::vector<int32_t> history_;
};

}  // namespace ridge::sampling
