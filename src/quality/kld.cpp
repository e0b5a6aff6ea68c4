#include "quality/kld.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quality/log_prob_file.h"
#include "quality/perplexity.h"

namespace ridge::quality {
namespace {

// Linear interpolation between the sorted values around fraction * (n - 1).
float percentile(const std::vector<float>& v, float fraction) {
  if (fraction <= 0) return v.front();
  if (fraction >= 1) return v.back();
  float p = fraction * static_cast<float>(v.size() - 1);
  const auto ip = static_cast<size_t>(p);
  p -= static_cast<float>(ip);
  return (1 - p) * v[ip] + p * v[std::min(ip + 1, v.size() - 1)];
}

float median(const std::vector<float>& v) {
  const size_t n = v.size();
  return n % 2 == 0 ? 0.5f * (v[n / 2] + v[n / 2 - 1]) : v[n / 2];
}

}  // namespace

void KldStats::add(std::span<const float> logits, std::span<const uint16_t> base_row, int32_t token) {
  const auto n_vocab = static_cast<int64_t>(logits.size());
  const RowNorm norm = row_norm(logits);
  const float max_logit = norm.max;
  const int64_t imax = norm.argmax;
  const auto log_sum_exp = static_cast<float>(std::log(norm.sum_exp));
  float scale, min_log_prob;
  std::memcpy(&scale, base_row.data(), sizeof scale);
  std::memcpy(&min_log_prob, base_row.data() + 2, sizeof min_log_prob);
  const uint16_t* q = base_row.data() + 4;
  const float nll = max_logit + log_sum_exp - logits[static_cast<size_t>(token)];
  const float nll_base = -(scale * q[token] + min_log_prob);
  sum_nll_ += nll;
  sum_nll2_ += static_cast<double>(nll * nll);
  sum_nll_base_ += nll_base;
  sum_nll_base2_ += static_cast<double>(nll_base * nll_base);
  sum_nll_nll_base_ += static_cast<double>(nll * nll_base);
  const float log_norm = max_logit + log_sum_exp;
  double kld = 0;
  int64_t imax_base = -1;
  float p_log_base_max = 0;
  for (int64_t i = 0; i < n_vocab; ++i) {
    const float p_log_base = scale * q[i] + min_log_prob;
    if (i == 0 || p_log_base > p_log_base_max) {
      p_log_base_max = p_log_base;
      imax_base = i;
    }
    if (p_log_base > -16.f) kld += std::exp(p_log_base) * (p_log_base - logits[static_cast<size_t>(i)] + log_norm);
  }
  sum_kld_ += kld;
  sum_kld2_ += kld * kld;
  ++count_;
  if (imax == imax_base) ++n_same_top_;
  const float p_diff = std::exp(-nll) - std::exp(-nll_base);
  sum_p_diff_ += p_diff;
  const double p_diff2 = static_cast<double>(p_diff * p_diff);
  sum_p_diff2_ += p_diff2;
  sum_p_diff4_ += p_diff2 * p_diff2;
  max_p_diff_ = std::max(max_p_diff_, std::fabs(p_diff));
  kld_values_.push_back(static_cast<float>(kld));
  p_diff_values_.push_back(p_diff);
}

std::pair<double, double> KldStats::mean_err(double sum, double sum2) const {
  if (count_ < 1) return {0., 0.};
  const double f = sum / static_cast<double>(count_);
  double df = sum2 / static_cast<double>(count_) - f * f;
  df = df > 0 && count_ > 10 ? std::sqrt(df / static_cast<double>(count_ - 1)) : 0.;
  return {f, df};
}

double KldStats::covariance(double a, double b, double ab) const {
  if (count_ < 10) return 0.0;
  const auto n = static_cast<double>(count_);
  return (ab / n - (a / n) * (b / n)) / (n - 1);
}

std::string KldStats::chunk_line(int64_t chunk) const {
  const auto lp = mean_err(sum_nll_, sum_nll2_), lb = mean_err(sum_nll_base_, sum_nll_base2_);
  const double cov = covariance(sum_nll_, sum_nll_base_, sum_nll_nll_base_);
  const auto kl = mean_err(sum_kld_, sum_kld2_);
  const auto mse = mean_err(sum_p_diff2_, sum_p_diff4_);
  const double rms = std::sqrt(mse.first);
  const double top = static_cast<double>(n_same_top_) / static_cast<double>(count_);
  return fmt::format("{:4}    {:9.4f} ± {:9.4f}    {:10.5f} ± {:10.5f}    {:10.5f} ± {:10.5f}    {:6.3f} ± {:6.3f} %    {:6.3f} ± {:6.3f} %",
                     chunk, std::exp(lp.first), std::exp(lp.first) * lp.second, lp.first - lb.first,
                     std::sqrt(lp.second * lp.second + lb.second * lb.second - 2.0 * cov), kl.first, kl.second,
                     100.0 * rms, 100.0 * 0.5 / rms * mse.second, 100.0 * top,
                     100.0 * std::sqrt(top * (1 - top) / static_cast<double>(count_ - 1)));
}

std::string KldStats::report() const {
  if (count_ < 100) return fmt::format("(only {} positions: no statistics below 100)\n", count_);
  std::vector<float> kv = kld_values_, pv = p_diff_values_;
  std::sort(kv.begin(), kv.end());
  std::sort(pv.begin(), pv.end());
  std::string s = "====== Perplexity statistics ======\n";
  const auto lp = mean_err(sum_nll_, sum_nll2_), lb = mean_err(sum_nll_base_, sum_nll_base2_);
  const double ppl = std::exp(lp.first), ppl_err = ppl * lp.second;
  const double base = std::exp(lb.first), base_err = base * lb.second;
  const double cov = covariance(sum_nll_, sum_nll_base_, sum_nll_nll_base_);
  s += fmt::format("Mean PPL(Q)                   : {:10.6f} ± {:10.6f}\n", ppl, ppl_err);
  s += fmt::format("Mean PPL(base)                : {:10.6f} ± {:10.6f}\n", base, base_err);
  s += fmt::format("Cor(ln(PPL(Q)), ln(PPL(base))): {:6.2f}%\n", 100.0 * cov / (lp.second * lb.second));
  const double ratio_ln = lp.first - lb.first;
  const double ratio_ln_err = std::sqrt(lp.second * lp.second + lb.second * lb.second - 2.0 * cov);
  s += fmt::format("Mean ln(PPL(Q)/PPL(base))     : {:10.6f} ± {:10.6f}\n", ratio_ln, ratio_ln_err);
  s += fmt::format("Mean PPL(Q)/PPL(base)         : {:10.6f} ± {:10.6f}\n", std::exp(ratio_ln), std::exp(ratio_ln) * ratio_ln_err);
  s += fmt::format("Mean PPL(Q)-PPL(base)         : {:10.6f} ± {:10.6f}\n\n", ppl - base,
                   std::sqrt(ppl_err * ppl_err + base_err * base_err - 2.0 * ppl * base * cov));
  s += "====== KL divergence statistics ======\n";
  const auto kl = mean_err(sum_kld_, sum_kld2_);
  s += fmt::format("Mean    KLD: {:10.6f} ± {:10.6f}\n", kl.first, kl.second);
  s += fmt::format("Maximum KLD: {:10.6f}\n", kv.back());
  for (auto [label, f] : {std::pair{"99.9%", 0.999f}, {"99.0%", 0.990f}, {"95.0%", 0.950f}, {"90.0%", 0.900f}}) {
    s += fmt::format("{}   KLD: {:10.6f}\n", label, percentile(kv, f));
  }
  s += fmt::format("Median  KLD: {:10.6f}\n", median(kv));
  for (auto [label, f] : {std::pair{"10.0%", 0.100f}, {" 5.0%", 0.050f}, {" 1.0%", 0.010f}, {" 0.1%", 0.001f}}) {
    s += fmt::format("{}   KLD: {:10.6f}\n", label, percentile(kv, f));
  }
  s += fmt::format("Minimum KLD: {:10.6f}\n\n", kv.front());
  s += "====== Token probability statistics ======\n";
  const auto pd = mean_err(sum_p_diff_, sum_p_diff2_);
  s += fmt::format("Mean    Δp: {:6.3f} ± {:5.3f} %\n", 100.0 * pd.first, 100.0 * pd.second);
  s += fmt::format("Maximum Δp: {:6.3f}%\n", 100.0 * pv.back());
  for (auto [label, f] : {std::pair{"99.9%", 0.999f}, {"99.0%", 0.990f}, {"95.0%", 0.950f}, {"90.0%", 0.900f}, {"75.0%", 0.750f}}) {
    s += fmt::format("{}   Δp: {:6.3f}%\n", label, 100.0 * percentile(pv, f));
  }
  s += fmt::format("Median  Δp: {:6.3f}%\n", 100.0 * median(pv));
  for (auto [label, f] : {std::pair{"25.0%", 0.250f}, {"10.0%", 0.100f}, {" 5.0%", 0.050f}, {" 1.0%", 0.010f}, {" 0.1%", 0.001f}}) {
    s += fmt::format("{}   Δp: {:6.3f}%\n", label, 100.0 * percentile(pv, f));
  }
  s += fmt::format("Minimum Δp: {:6.3f}%\n", 100.0 * pv.front());
  const auto mse = mean_err(sum_p_diff2_, sum_p_diff4_);
  const double rms = std::sqrt(mse.first);
  s += fmt::format("RMS Δp    : {:6.3f} ± {:5.3f} %\n", 100.0 * rms, 100.0 * 0.5 / rms * mse.second);
  const double top = static_cast<double>(n_same_top_) / static_cast<double>(count_);
  s += fmt::format("Same top p: {:6.3f} ± {:5.3f} %\n", 100.0 * top, 100.0 * std::sqrt(top * (1.0 - top) / static_cast<double>(count_ - 1)));
  return s;
}

KldSummary KldStats::summary() const {
  KldSummary r;
  r.count = count_;
  if (count_ == 0) return r;
  const auto n = static_cast<double>(count_);
  r.ppl = std::exp(sum_nll_ / n);
  r.ppl_base = std::exp(sum_nll_base_ / n);
  r.ln_ppl_ratio = (sum_nll_ - sum_nll_base_) / n;
  r.kld_mean = sum_kld_ / n;
  std::vector<float> kv = kld_values_;
  std::sort(kv.begin(), kv.end());
  r.kld_median = median(kv);
  r.kld_99 = percentile(kv, 0.99f);
  r.kld_max = kv.back();
  r.rms_dp = std::sqrt(sum_p_diff2_ / n);
  r.same_top = static_cast<double>(n_same_top_) / n;
  return r;
}

}  // namespace ridge::quality
