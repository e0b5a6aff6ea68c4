// `ridge quantize --target-kld X`: a per-tensor mixture chosen for a quality budget. Each group of
// tensors (one tensor where the model has few, else one kind in one quarter of the layers) is
// quantized alone to each type of a ladder while the rest stay at its top, and the KL divergence
// that adds is measured once; the cheapest assignment whose predicted KLD (the top's plus the
// groups' additions) meets the budget is taken greedily (best KLD saved per byte first), then
// measured, and upgraded further while the measured KLD is over the budget.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "gguf/reader.h"
#include "kernels/kernels.h"
#include "offline/quantize.h"
#include "quality/kld_eval.h"

namespace ridge::quality {

struct MixSearchOptions {
  double target_kld = 0;
  // Types from the cheapest to the best (a type a tensor's width cannot take falls back as
  // the mixtures' rules do).
  std::vector<GgmlType> ladder = {GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K,
                                  GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ8_0};
  const offline::ImportanceMap* importance = nullptr;
  int64_t max_groups = 64;  // one group per tensor up to this many quantizable tensors
  int n_threads = 1;
};

struct MixSearchResult {
  std::vector<offline::TensorTypeOverride> overrides;  // exact names: the chosen mixture
  offline::QuantizePlan plan;
  double kld_top = 0;        // every tensor at the ladder's top
  double kld_predicted = 0;
  double kld_measured = 0;
  double kld_named = 0;      // the named mixture's own rules, for comparison
  double bpw_named = 0;      // and its bits per weight
  int64_t n_groups = 0;
  int64_t n_evaluations = 0;  // quantized copies measured
};

// `base`: the F32/F16/BF16 model's distributions on `tokens` (options `o`); `mix`: the mixture
// whose rules place what the search does not (non-quantizable tensors). A budget below the
// ladder top's own KLD is an error naming both.
Result<MixSearchResult> search_mixture(const gguf::File& in, const kernels::Kernels& k, const BaseDistributions& base,
                                       std::span<const int32_t> tokens, const PerplexityOptions& o,
                                       offline::QuantMix mix, const MixSearchOptions& opt, ThreadPool& pool,
                                       const std::function<void(const std::string&)>& log = {});

}  // namespace ridge::quality
