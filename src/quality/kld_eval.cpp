#include "quality/kld_eval.h"

#include "quality/log_prob_file.h"

namespace ridge::quality {

Result<BaseDistributions> base_distributions(const model::Model& m, std::span<const int32_t> tokens,
                                             const PerplexityOptions& o, ThreadPool& pool) {
  BaseDistributions b;
  b.n_vocab = static_cast<int32_t>(m.config().n_vocab);
  const auto width = static_cast<size_t>(log_prob_row_width(b.n_vocab));
  const ScoredRow keep = [&](std::span<const float> logits, int32_t next) -> Status {
    b.rows.resize(b.rows.size() + width);
    compress_log_probs(logits, next, std::span(b.rows).last(width));
    return ok_status();
  };
  RIDGE_ASSIGN_OR_RETURN(b.ppl, perplexity(m, tokens, o, pool, {}, keep));
  return b;
}

Result<KldSummary> kld_against(const model::Model& m, const BaseDistributions& base,
                               std::span<const int32_t> tokens, const PerplexityOptions& o, ThreadPool& pool) {
  if (m.config().n_vocab != base.n_vocab) {
    return usage_error("KL divergence: the model's vocabulary has {} tokens, the base's {}", m.config().n_vocab, base.n_vocab);
  }
  const auto width = static_cast<size_t>(log_prob_row_width(base.n_vocab));
  KldStats stats;
  size_t at = 0;
  const ScoredRow add = [&](std::span<const float> logits, int32_t next) -> Status {
    if (at + width > base.rows.size()) return error("KL divergence: more positions than the base has");
    stats.add(logits, std::span(base.rows).subspan(at, width), next);
    at += width;
    return ok_status();
  };
  RIDGE_RETURN_IF_ERROR(perplexity(m, tokens, o, pool, {}, add).status());
  if (at != base.rows.size()) return error("KL divergence: {} of the base's {} positions scored", at / width, base.rows.size() / width);
  return stats.summary();
}

}  // namespace ridge::quality
