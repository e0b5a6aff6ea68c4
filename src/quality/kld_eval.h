// KL divergence without a file between: a base model's distributions kept in memory (compressed
// as in the log-probability file, quality/log_prob_file.h) and other models evaluated against
// them on the same tokens (ridge quality's sweep over quantization types).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/model.h"
#include "quality/kld.h"
#include "quality/perplexity.h"

namespace ridge::quality {

struct BaseDistributions {
  int32_t n_vocab = 0;
  std::vector<uint16_t> rows;  // every scored position, log_prob_row_width(n_vocab) each
  PerplexityResult ppl;
};

Result<BaseDistributions> base_distributions(const model::Model& m, std::span<const int32_t> tokens,
                                             const PerplexityOptions& o, ThreadPool& pool);

// `m` on the same tokens and options, against `base`.
Result<KldSummary> kld_against(const model::Model& m, const BaseDistributions& base,
                               std::span<const int32_t> tokens, const PerplexityOptions& o, ThreadPool& pool);

}  // namespace ridge::quality
