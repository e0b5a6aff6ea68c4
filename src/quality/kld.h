// KL divergence of a model's next-token distributions from a base model's (saved by
// --save-logits in llama-perplexity's format, quality/log_prob_file.h), with the statistics
// llama-perplexity --kl-divergence reports, computed the same way so the numbers compare: the
// perplexities of both and their ratio (with the correlation of the two NLLs), the KL
// divergence's mean, percentiles and extremes, the change of the text token's probability (Δp),
// and how often both models rank the same token first.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ridge::quality {

// The headline figures of a KldStats (its report's, as numbers).
struct KldSummary {
  double ppl = 0, ppl_base = 0;
  double ln_ppl_ratio = 0;  // mean ln(PPL(Q)/PPL(base))
  double kld_mean = 0, kld_median = 0, kld_99 = 0, kld_max = 0;
  double rms_dp = 0;        // RMS of the text token's probability change, 0..1
  double same_top = 0;      // fraction of positions whose most likely token is the base's, 0..1
  int64_t count = 0;
};

class KldStats {
 public:
  // One scored position: this model's logits, the base's compressed row, the text's next token.
  void add(std::span<const float> logits, std::span<const uint16_t> base_row, int32_t token);
  int64_t count() const { return count_; }
  // llama.cpp's per-chunk line: chunk, PPL, ln(PPL(Q)/PPL(base)), KLD, RMS Δp, same top p.
  std::string chunk_line(int64_t chunk) const;
  // The closing report (needs 100 positions or more, as llama.cpp's).
  std::string report() const;
  KldSummary summary() const;

 private:
  // Mean and its standard error (0 for 10 values or fewer).
  std::pair<double, double> mean_err(double sum, double sum2) const;
  double covariance(double a, double b, double ab) const;
  double sum_nll_ = 0, sum_nll2_ = 0, sum_nll_base_ = 0, sum_nll_base2_ = 0, sum_nll_nll_base_ = 0;
  double sum_kld_ = 0, sum_kld2_ = 0, sum_p_diff_ = 0, sum_p_diff2_ = 0, sum_p_diff4_ = 0;
  float max_p_diff_ = 0;
  int64_t n_same_top_ = 0, count_ = 0;
  std::vector<float> kld_values_, p_diff_values_;
};

}  // namespace ridge::quality
