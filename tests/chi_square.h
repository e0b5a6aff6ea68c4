// Pearson's chi-square tests for the statistical tests of samplers: goodness of fit of counts to
// known probabilities, and homogeneity of two samples. Categories too small for the chi-square
// approximation are pooled into one. The p-value comes from the regularized upper incomplete
// gamma function Q(df / 2, stat / 2), by its series below a + 1 and its continued fraction above.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>

namespace ridge::testing {

struct ChiSquare {
  double stat = 0;
  int df = 0;
  double p_value = 1;
};

// Q(a, x) = Γ(a, x) / Γ(a), a > 0, x >= 0.
inline double upper_gamma_q(double a, double x) {
  if (x <= 0) return 1.0;
  const double log_prefix = a * std::log(x) - x - std::lgamma(a);
  if (x < a + 1) {  // P(a, x) = e^-x x^a / Γ(a + 1) Σ x^n / ((a + 1) ... (a + n))
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 1000 && term > sum * 1e-15; ++n) {
      term *= x / (a + n);
      sum += term;
    }
    return 1.0 - sum * std::exp(log_prefix);
  }
  // Lentz's method on the continued fraction of Γ(a, x) e^x x^-a.
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < 1e-15) break;
  }
  return std::exp(log_prefix) * h;
}

inline ChiSquare finish(double stat, int df) {
  ChiSquare out{stat, df, 1.0};
  if (df > 0) out.p_value = upper_gamma_q(df / 2.0, stat / 2.0);
  return out;
}

// counts[token] of n draws against probs[token] (summing to 1; a count outside probs is a
// category of expected count 0, which makes the statistic infinite). Categories expected
// fewer than 5 times are pooled.
inline ChiSquare chi_square_fit(const std::map<int32_t, int64_t>& counts, const std::map<int32_t, double>& probs) {
  int64_t n = 0;
  for (const auto& [t, c] : counts) n += c;
  for (const auto& [t, c] : counts) {
    if (c > 0 && !probs.contains(t)) return {INFINITY, 1, 0.0};
  }
  double stat = 0, pooled_e = 0, pooled_o = 0;
  int k = 0;
  for (const auto& [t, p] : probs) {
    const double e = p * static_cast<double>(n);
    const auto it = counts.find(t);
    const double o = it == counts.end() ? 0.0 : static_cast<double>(it->second);
    if (e < 5) {
      pooled_e += e;
      pooled_o += o;
      continue;
    }
    stat += (o - e) * (o - e) / e;
    ++k;
  }
  if (pooled_e > 0) {
    stat += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
    ++k;
  }
  return finish(stat, k - 1);
}

// Whether samples a and b (counts by category) come from one distribution: the 2 x K table's
// statistic, categories with fewer than 10 draws in both samples together pooled.
inline ChiSquare chi_square_same(const std::map<int32_t, int64_t>& a, const std::map<int32_t, int64_t>& b) {
  std::map<int32_t, std::pair<double, double>> cells;
  double na = 0, nb = 0;
  for (const auto& [t, c] : a) {
    cells[t].first += static_cast<double>(c);
    na += static_cast<double>(c);
  }
  for (const auto& [t, c] : b) {
    cells[t].second += static_cast<double>(c);
    nb += static_cast<double>(c);
  }
  std::map<int32_t, std::pair<double, double>> table;
  for (const auto& [t, ab] : cells) {
    auto& cell = ab.first + ab.second < 10 ? table[-1] : table[t];
    cell.first += ab.first;
    cell.second += ab.second;
  }
  const double n = na + nb;
  double stat = 0;
  for (const auto& [t, ab] : table) {
    const double col = ab.first + ab.second;
    const double ea = col * na / n, eb = col * nb / n;
    stat += (ab.first - ea) * (ab.first - ea) / ea + (ab.second - eb) * (ab.second - eb) / eb;
  }
  return finish(stat, static_cast<int>(table.size()) - 1);
}

}  // namespace ridge::testing
