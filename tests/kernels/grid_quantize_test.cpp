// Writing the grid and ternary formats (kernels/quant/quantize_grid.cpp, grid_search.cpp):
// - the bytes decode (by the decoder checked bit for bit against ggml's) to the values the
//   search chose, so every field lands where the format reads it;
// - the codebook's short candidate lists find the whole grid's best entry (or one within a hair);
// - on the same data and importance weights, ridge's blocks are at least about as accurate as
//   llama.cpp's quantizer (the peer's libggml-base.so, ggml_quantize_chunk), format by format.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ggml_peer.h"
#include "kernels/quant/grid_codebook.h"
#include "kernels/quant/grid_formats.h"
#include "kernels/quant/grid_search.h"
#include "kernels/quant/quants.h"

namespace ridge::kernels::grid_quantize_test {
namespace {

constexpr int64_t kCols = 1024;

std::vector<float> normal(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(rng);
  return v;
}

// Per-column importance: log-normal (sigma 1.5), as activations' mean squares spread.
std::vector<float> importance(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::lognormal_distribution<float> ln(0.0f, 1.5f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = ln(rng);
  return v;
}

std::vector<uint8_t> quantize(GgmlType t, const float* x, int64_t n, const float* w) {
  std::vector<uint8_t> q(static_cast<size_t>(n / kQkK * traits(t).block_bytes));
  quantize_row_weighted(t, x, q.data(), n, w);
  return q;
}

std::vector<float> decode(GgmlType t, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row_quant(t, q.data(), y.data(), n);
  return y;
}

double weighted_error(const float* x, const float* y, const float* w, int64_t n) {
  double e = 0.0;
  for (int64_t i = 0; i < n; ++i) e += (w ? w[i] : 1.0) * (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
  return e;
}

TEST(GridQuantize, EveryFormatIsWritable) {
  for (GgmlType t : kGridFormats) EXPECT_TRUE(can_quantize(t)) << ggml_type_name(t);
}

// Zero input: zero output in every format (d = 0), and non-finite input still makes blocks.
TEST(GridQuantize, ZeroAndNonFiniteInput) {
  std::vector<float> zero(kQkK, 0.0f), bad = normal(kQkK, 3);
  bad[5] = NAN;
  bad[9] = INFINITY;
  for (GgmlType t : kGridFormats) {
    const std::vector<float> y = decode(t, quantize(t, zero.data(), kQkK, nullptr), kQkK);
    for (float v : y) ASSERT_EQ(v, 0.0f) << ggml_type_name(t);
    (void)quantize(t, bad.data(), kQkK, nullptr);
  }
}

// The decoded block is the search's choice: each field packed where the decoder reads it.
TEST(GridQuantize, BytesDecodeToTheChosenValues) {
  const std::vector<float> x = normal(8 * kQkK, 11), w = importance(8 * kQkK, 12);
  for (GgmlType t : kGridFormats) {
    const std::vector<float> y = decode(t, quantize(t, x.data(), 8 * kQkK, w.data()), 8 * kQkK);
    // Near the input (no field read from the wrong place: that would be far off) ...
    const double err = weighted_error(x.data(), y.data(), w.data(), 8 * kQkK);
    const double energy = weighted_error(x.data(), std::vector<float>(x.size(), 0.0f).data(), w.data(), 8 * kQkK);
    EXPECT_LT(err, 0.5 * energy) << ggml_type_name(t);
  }
  // ... and equal to what the search chose, up to the decoders' float rounding.
  for (GgmlType t : kGridFormats) {
    const GridSpec* spec_of = grid_spec_of(t);
    if (spec_of == nullptr) continue;  // the ternary formats: TernaryValues
    const GridSpec& spec = *spec_of;
    for (int b = 0; b < 8; ++b) {
      const float* xb = x.data() + b * kQkK;
      const float* wb = w.data() + b * kQkK;
      GridChoice c;
      choose_grid(spec, xb, wb, c);
      const std::vector<float> y = decode(t, quantize(t, xb, kQkK, wb), kQkK);
      for (int e = 0; e < kQkK; ++e) {
        const double v = grid_value(spec, c, e);
        ASSERT_NEAR(y[static_cast<size_t>(e)], v, 1e-6 * std::abs(v) + 1e-9) << ggml_type_name(t) << " block " << b << " element " << e;
      }
    }
  }
}

// The ternary formats: every value is d * t for one d per block, t in {-1, 0, 1}.
TEST(GridQuantize, TernaryValues) {
  const std::vector<float> x = normal(4 * kQkK, 21);
  for (GgmlType t : {GgmlType::kTQ1_0, GgmlType::kTQ2_0}) {
    const std::vector<float> y = decode(t, quantize(t, x.data(), 4 * kQkK, nullptr), 4 * kQkK);
    for (int b = 0; b < 4; ++b) {
      float d = 0.0f;
      for (int e = 0; e < kQkK; ++e) d = std::max(d, std::abs(y[static_cast<size_t>(b * kQkK + e)]));
      ASSERT_GT(d, 0.0f);
      int zeros = 0;
      for (int e = 0; e < kQkK; ++e) {
        const float v = y[static_cast<size_t>(b * kQkK + e)], xi = x[static_cast<size_t>(b * kQkK + e)];
        ASSERT_TRUE(v == 0.0f || std::abs(v) == d) << ggml_type_name(t);
        if (v != 0.0f) {
          ASSERT_EQ(v > 0, xi > 0) << ggml_type_name(t) << " sign of element " << e;
        }
        zeros += v == 0.0f;
      }
      EXPECT_GT(zeros, 0) << ggml_type_name(t);  // N(0, 1) data: the small values round to 0
    }
  }
}

// The candidate lists against an exhaustive search of the grid: the best entry found is the
// grid's best in almost every group, and loses next to nothing where it is not.
TEST(GridQuantize, CandidatesFindTheGridsBest) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::lognormal_distribution<float> ln(0.0f, 1.0f);
  for (GgmlType t : {GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS, GgmlType::kIQ2_S, GgmlType::kIQ3_XXS, GgmlType::kIQ3_S,
                     GgmlType::kIQ1_S}) {
    const GridCodebook& book = GridCodebook::of(t);
    const float top = book.level(book.levels() - 1);
    const float delta = t == GgmlType::kIQ1_S ? 1.0f : 0.0f;
    int misses = 0;
    double found = 0.0, exact = 0.0;
    for (int trial = 0; trial < 3000; ++trial) {
      float y[8], w[8];
      for (int e = 0; e < book.group(); ++e) {
        y[e] = t == GgmlType::kIQ1_S ? nd(rng) : std::abs(nd(rng));
        w[e] = ln(rng);
      }
      const float s = 2.5f / top;
      double err = 0.0;
      book.best(y, w, s, delta, &err);
      double best = INFINITY;
      for (int k = 0; k < book.entries(); ++k) {
        double e2 = 0.0;
        for (int e = 0; e < book.group(); ++e) {
          const double r = y[e] - double(s) * (book.level(book.entry_level(k, e)) + delta);
          e2 += w[e] * r * r;
        }
        best = std::min(best, e2);
      }
      ASSERT_GE(err, best * (1 - 1e-5));  // float sums
      misses += err > best * (1 + 1e-5);
      found += err;
      exact += best;
    }
    std::printf("%-8s grid's best missed in %d of 3000 groups, error %.4f of the best\n", ggml_type_name(t).data(),
                misses, found / exact);
    EXPECT_LT(misses, 3000 / 10) << ggml_type_name(t);
    EXPECT_LT(found, exact * 1.01) << ggml_type_name(t);
  }
}

using QuantizeChunk = size_t (*)(int type, const float* src, void* dst, int64_t start, int64_t nrows,
                                 int64_t n_per_row, const float* imatrix);

// Error of ridge's and llama.cpp's blocks on the same rows: weighted by the same importance for
// every format, and plain (no importance matrix) for those llama.cpp writes without one.
TEST(GridQuantize, AsAccurateAsLlamaCpp) {
  void* lib = ggml_peer::ggml_library();
  if (lib == nullptr) GTEST_SKIP() << "llama.cpp peer not installed (../shared/peer/install.sh)";
  auto chunk = reinterpret_cast<QuantizeChunk>(dlsym(lib, "ggml_quantize_chunk"));
  auto requires_imatrix = reinterpret_cast<bool (*)(int)>(dlsym(lib, "ggml_quantize_requires_imatrix"));
  ASSERT_NE(chunk, nullptr);
  ASSERT_NE(requires_imatrix, nullptr);
  constexpr int64_t kRows = 16;
  const std::vector<float> x = normal(kRows * kCols, 31), imatrix = importance(kCols, 32);
  for (GgmlType t : kGridFormats) {
    for (const float* w : {imatrix.data(), static_cast<const float*>(nullptr)}) {
      if (w == nullptr && requires_imatrix(static_cast<int>(t))) continue;
      const auto& tr = traits(t);
      const int64_t row_bytes = kCols / kQkK * static_cast<int64_t>(tr.block_bytes);
      std::vector<uint8_t> theirs(static_cast<size_t>(kRows * row_bytes));
      chunk(static_cast<int>(t), x.data(), theirs.data(), 0, kRows, kCols, w);
      double ours_err = 0.0, theirs_err = 0.0;
      for (int64_t r = 0; r < kRows; ++r) {
        const float* xr = x.data() + r * kCols;
        const std::vector<float> y = decode(t, quantize(t, xr, kCols, w), kCols);
        const std::vector<uint8_t> row(theirs.begin() + r * row_bytes, theirs.begin() + (r + 1) * row_bytes);
        const std::vector<float> z = decode(t, row, kCols);
        ours_err += weighted_error(xr, y.data(), w, kCols);
        theirs_err += weighted_error(xr, z.data(), w, kCols);
      }
      std::printf("%-8s %-9s error ridge %.5f llama.cpp %.5f ratio %.3f\n", ggml_type_name(t).data(),
                  w ? "weighted" : "plain", ours_err / (kRows * kCols), theirs_err / (kRows * kCols),
                  ours_err / theirs_err);
      EXPECT_LT(ours_err, 1.02 * theirs_err) << ggml_type_name(t) << (w ? " weighted" : " plain");
    }
  }
}

}  // namespace
}  // namespace ridge::kernels::grid_quantize_test
