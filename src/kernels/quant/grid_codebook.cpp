#include "kernels/quant/grid_codebook.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <span>

#include "base/check.h"
#include "kernels/quant/iq_grids.h"

namespace ridge::kernels {
namespace {

// Candidates kept per lattice point: enough that the weighted best is almost always among them
// (tests/kernels/grid_quantize_test.cpp checks the search against the whole grid); IQ2_XXS's
// grid is the sparsest (256 entries for 6561 points) and needs more.
int candidates_of(GgmlType type) { return type == GgmlType::kIQ2_XXS ? 24 : 16; }

template <typename Word, size_t N>
std::vector<int8_t> entry_bytes(const std::array<Word, N>& grid, int group) {
  std::vector<int8_t> out(N * static_cast<size_t>(group));
  for (size_t k = 0; k < N; ++k) {
    for (int e = 0; e < group; ++e) out[k * group + e] = static_cast<int8_t>((grid[k] >> (8 * e)) & 0xff);
  }
  return out;
}

}  // namespace

const GridCodebook& GridCodebook::of(GgmlType type) {
  switch (type) {
    case GgmlType::kIQ2_XXS: { static const GridCodebook b(type); return b; }
    case GgmlType::kIQ2_XS: { static const GridCodebook b(type); return b; }
    case GgmlType::kIQ2_S: { static const GridCodebook b(type); return b; }
    case GgmlType::kIQ3_XXS: { static const GridCodebook b(type); return b; }
    case GgmlType::kIQ3_S: { static const GridCodebook b(type); return b; }
    case GgmlType::kIQ1_S: case GgmlType::kIQ1_M: { static const GridCodebook b(GgmlType::kIQ1_S); return b; }
    default: RIDGE_CHECK(false && "not a grid format");
  }
  static const GridCodebook none(GgmlType::kIQ1_S);
  return none;
}

GridCodebook::GridCodebook(GgmlType type) {
  std::vector<int8_t> bytes;
  switch (type) {
    case GgmlType::kIQ2_XXS: group_ = 8, bytes = entry_bytes(kIq2XxsGrid, 8); break;
    case GgmlType::kIQ2_XS: group_ = 8, bytes = entry_bytes(kIq2XsGrid, 8); break;
    case GgmlType::kIQ2_S: group_ = 8, bytes = entry_bytes(kIq2SGrid, 8); break;
    case GgmlType::kIQ3_XXS: group_ = 4, bytes = entry_bytes(kIq3XxsGrid, 4); break;
    case GgmlType::kIQ3_S: group_ = 4, bytes = entry_bytes(kIq3SGrid, 4); break;
    default: group_ = 8, bytes = entry_bytes(kIq1SGrid, 8); break;
  }
  n_entries_ = static_cast<int>(bytes.size()) / group_;
  // The levels are the distinct element values (IQ1's -1, 0, 1 become q units -8, 0, 8).
  const int unit = type == GgmlType::kIQ1_S ? 8 : 1;
  std::vector<int> values(bytes.begin(), bytes.end());
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  RIDGE_CHECK(values.size() <= 8);
  n_levels_ = static_cast<int>(values.size());
  for (int i = 0; i < n_levels_; ++i) levels_[i] = static_cast<float>(unit * values[i]);
  entry_levels_.resize(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    entry_levels_[i] = static_cast<uint8_t>(std::lower_bound(values.begin(), values.end(), bytes[i]) - values.begin());
  }

  int lattice = 1;
  for (int e = 0; e < group_; ++e) lattice *= n_levels_;
  cand_begin_.assign(static_cast<size_t>(lattice) + 1, 0);
  std::vector<float> dist(static_cast<size_t>(n_entries_));
  std::vector<uint16_t> order(static_cast<size_t>(n_entries_));
  const int keep = std::min(candidates_of(type), n_entries_);
  for (int p = 0; p < lattice; ++p) {
    int point[8];
    for (int e = 0, r = p; e < group_; ++e, r /= n_levels_) point[e] = r % n_levels_;
    for (int k = 0; k < n_entries_; ++k) {
      float d = 0.0f;
      for (int e = 0; e < group_; ++e) {
        const float t = levels_[point[e]] - levels_[entry_level(k, e)];
        d += t * t;
      }
      dist[static_cast<size_t>(k)] = d;
    }
    std::iota(order.begin(), order.end(), uint16_t{0});
    std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                      [&](uint16_t a, uint16_t b) { return dist[a] != dist[b] ? dist[a] < dist[b] : a < b; });
    cand_.insert(cand_.end(), order.begin(), order.begin() + keep);
    cand_begin_[static_cast<size_t>(p) + 1] = static_cast<uint32_t>(cand_.size());
  }
}

int GridCodebook::nearest_level(float u) const {
  int best = 0;
  for (int i = 1; i < n_levels_; ++i) {
    if (std::abs(u - levels_[i]) < std::abs(u - levels_[best])) best = i;
  }
  return best;
}

int GridCodebook::best(const float* y, const float* w, float s, float delta, double* err) const {
  // cost[e][l]: element e's error at level l.
  float cost[8][8];
  int p = 0;
  for (int e = group_ - 1; e >= 0; --e) {
    const float we = w != nullptr ? w[e] : 1.0f;
    for (int l = 0; l < n_levels_; ++l) {
      const float r = y[e] - s * (levels_[l] + delta);
      cost[e][l] = we * r * r;
    }
    p = p * n_levels_ + nearest_level(y[e] / s - delta);
  }
  int best = -1;
  float best_err = INFINITY;
  for (uint32_t c = cand_begin_[static_cast<size_t>(p)]; c < cand_begin_[static_cast<size_t>(p) + 1]; ++c) {
    const int k = cand_[c];
    float e2 = 0.0f;
    for (int e = 0; e < group_; ++e) e2 += cost[e][entry_level(k, e)];
    if (e2 < best_err) best_err = e2, best = k;
  }
  *err = best_err;
  return best;
}

}  // namespace ridge::kernels
