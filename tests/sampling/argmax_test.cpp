// argmax against the one-branch-per-element scan it replaces (the definition), on every length
// around the vector width, with ties, signed zeros, infinities and NaNs placed anywhere.
#include "sampling/argmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace ridge::sampling {
namespace {

int32_t scan(const std::vector<float>& v) {
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] > v[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

TEST(Argmax, AsTheScanOnRandomRowsWithTiesAndSpecialValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {nan, inf, -inf, 0.0f, -0.0f, 3.0f, -3.0f};
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> small(-4, 4);  // few distinct values: many ties
  std::uniform_int_distribution<int> pick(0, 6);
  int rows = 0;
  for (size_t n = 0; n <= 70; ++n) {
    for (int t = 0; t < 200; ++t, ++rows) {
      std::vector<float> v(n);
      for (auto& x : v) x = static_cast<float>(small(rng)) * 0.5f;
      const int n_special = t % 4;
      for (int s = 0; s < n_special && n > 0; ++s) {
        v[static_cast<size_t>(rng() % n)] = specials[pick(rng)];
      }
      ASSERT_EQ(argmax(v), scan(v)) << "n=" << n << " row " << t;
    }
  }
  EXPECT_EQ(rows, 71 * 200);
}

TEST(Argmax, LargeVocabularyAndEdgeCases) {
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<float> v(151936);
  for (auto& x : v) x = normal(rng);
  v[120001] = 40.0f;
  v[150000] = 40.0f;
  EXPECT_EQ(argmax(v), 120001);
  EXPECT_EQ(argmax(std::vector<float>{}), 0);
  EXPECT_EQ(argmax(std::vector<float>{std::nanf(""), 5.0f}), 0);  // the scan keeps index 0
  EXPECT_EQ(argmax(std::vector<float>{1.0f, std::nanf(""), 2.0f}), 2);
  EXPECT_EQ(argmax(std::vector<float>{-0.0f, 0.0f}), 0);
}

}  // namespace
}  // namespace ridge::sampling
