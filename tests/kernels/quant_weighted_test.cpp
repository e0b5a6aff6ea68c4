// quantize_row_weighted: the scale searches with a weight per element (an importance matrix's
// per-column mean squared activation). All-one weights give quantize_row's bytes; weights that
// vary lower the weighted squared error sum w (x - x^)^2 in every format with a search; the Q8
// formats (no search) ignore them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/quant/quants.h"

namespace ridge::kernels {
namespace {

constexpr int64_t kCols = 1024;
constexpr int64_t kRows = 48;

const GgmlType kSearched[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                              GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
                              GgmlType::kQ6_K};

std::vector<float> normal(int64_t n, uint32_t seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(rng);
  return v;
}

std::vector<uint8_t> quantize(GgmlType type, const float* x, const float* w) {
  const auto& tr = traits(type);
  std::vector<uint8_t> q(static_cast<size_t>(kCols / tr.block_elems * tr.block_bytes));
  if (w == nullptr) {
    quantize_row(type, x, q.data(), kCols);
  } else {
    quantize_row_weighted(type, x, q.data(), kCols, w);
  }
  return q;
}

double weighted_error(GgmlType type, const std::vector<uint8_t>& q, const float* x, const float* w) {
  std::vector<float> y(static_cast<size_t>(kCols));
  dequantize_row_quant(type, q.data(), y.data(), kCols);
  double e = 0;
  for (int64_t i = 0; i < kCols; ++i) e += w[i] * (double(x[i]) - y[static_cast<size_t>(i)]) * (double(x[i]) - y[static_cast<size_t>(i)]);
  return e;
}

TEST(QuantWeighted, UnitWeightsGiveTheUnweightedBytes) {
  const std::vector<float> x = normal(kRows * kCols, 1, 1.0f);
  const std::vector<float> ones(static_cast<size_t>(kCols), 1.0f);
  for (GgmlType t : kSearched) {
    for (int64_t r = 0; r < kRows; ++r) {
      ASSERT_EQ(quantize(t, x.data() + r * kCols, ones.data()), quantize(t, x.data() + r * kCols, nullptr))
          << ggml_type_name(t) << " row " << r;
    }
  }
}

// Importance spread over two orders of magnitude across columns (log-normal), as an imatrix's is.
TEST(QuantWeighted, WeightsLowerTheWeightedError) {
  const std::vector<float> x = normal(kRows * kCols, 2, 1.0f);
  std::vector<float> w = normal(kCols, 3, 1.5f);
  for (float& v : w) v = std::exp(v);
  for (GgmlType t : kSearched) {
    double plain = 0, weighted = 0;
    for (int64_t r = 0; r < kRows; ++r) {
      const float* row = x.data() + r * kCols;
      plain += weighted_error(t, quantize(t, row, nullptr), row, w.data());
      weighted += weighted_error(t, quantize(t, row, w.data()), row, w.data());
    }
    EXPECT_LT(weighted, 0.9 * plain) << ggml_type_name(t) << ": " << weighted << " vs " << plain;
  }
}

TEST(QuantWeighted, FormatsWithoutASearchIgnoreTheWeights) {
  const std::vector<float> x = normal(kCols, 4, 1.0f);
  std::vector<float> w = normal(kCols, 5, 1.0f);
  for (float& v : w) v = std::exp(v);
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ8_1, GgmlType::kQ8_K}) {
    EXPECT_EQ(quantize(t, x.data(), w.data()), quantize(t, x.data(), nullptr)) << ggml_type_name(t);
  }
}

}  // namespace
}  // namespace ridge::kernels
