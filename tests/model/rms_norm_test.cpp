// rms_norm against its definition as llama.cpp computes it (f32 squares added in order in double,
// the mean rounded to f32): ridge folds eight chains instead, and must give the same f32 mean,
// hence the same output bits, on every length (tails included) and on heavy-tailed rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "model/ops.h"

namespace ridge::model {
namespace {

std::vector<float> ordered_rms_norm(const std::vector<float>& x, const std::vector<float>& w, float eps) {
  double ss = 0.0;
  for (float v : x) ss += static_cast<double>(v * v);
  const auto mean = static_cast<float>(ss / static_cast<double>(x.size()));
  const float scale = 1.0f / std::sqrt(mean + eps);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * w[i];
  return y;
}

TEST(RmsNorm, SameBitsAsTheOrderedDoubleSum) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::lognormal_distribution<float> spread(0.0f, 2.0f);
  int rows = 0;
  for (int64_t n : {1, 2, 7, 8, 9, 15, 17, 64, 127, 128, 129, 1000, 1024, 2048, 4096}) {
    for (int t = 0; t < 300; ++t, ++rows) {
      std::vector<float> x(static_cast<size_t>(n)), w(x.size()), y(x.size() + 1, -3.0f);
      for (auto& v : x) v = (t % 2 == 0) ? normal(rng) : normal(rng) * spread(rng);
      for (auto& v : w) v = 1.0f + 0.1f * normal(rng);
      rms_norm(x.data(), w.data(), y.data(), n, 1e-6f);
      const std::vector<float> want = ordered_rms_norm(x, w, 1e-6f);
      ASSERT_EQ(std::memcmp(y.data(), want.data(), want.size() * sizeof(float)), 0) << "n=" << n << " row " << t;
      ASSERT_EQ(y[static_cast<size_t>(n)], -3.0f) << "wrote past n=" << n;
    }
  }
  EXPECT_EQ(rows, 15 * 300);
}

TEST(RmsNorm, InPlaceAsTheQKNormsUseIt) {
  std::vector<float> x = {3.0f, -4.0f, 0.0f, 12.0f}, w = {1.0f, 1.0f, 1.0f, 2.0f};
  const std::vector<float> want = ordered_rms_norm(x, w, 0.0f);
  rms_norm(x.data(), w.data(), x.data(), 4, 0.0f);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], want[i]) << i;
  EXPECT_FLOAT_EQ(x[3], 12.0f / 6.5f * 2.0f);  // mean of squares 169/4, rms 6.5
}

}  // namespace
}  // namespace ridge::model
