// Quantize -> dequantize of the reference block formats on random data.
//
// The RMSE bounds are llama.cpp's: its reference quantizers (quantize_row_*_ref of
// libggml-base, node-llama-cpp 3.21.1) measured on N(0, 1) data, 64 rows x 4096 (see
// docs/quantization.md). ridge's quantizer must do at least as well, with 2% slack for the
// different sample drawn here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/quant/quants.h"

namespace ridge::kernels {
namespace {

struct Case {
  GgmlType type;
  double llama_cpp_rmse;  // on N(0, 1)
};

const Case kCases[] = {
    {GgmlType::kQ4_0, 0.08594}, {GgmlType::kQ4_1, 0.07804}, {GgmlType::kQ5_0, 0.04262},
    {GgmlType::kQ5_1, 0.03785}, {GgmlType::kQ8_0, 0.00534}, {GgmlType::kQ8_1, 0.00534},
    {GgmlType::kQ2_K, 0.29596}, {GgmlType::kQ3_K, 0.15093}, {GgmlType::kQ4_K, 0.07125},
    {GgmlType::kQ5_K, 0.03611}, {GgmlType::kQ6_K, 0.01776}, {GgmlType::kQ8_K, 0.00695},
};

std::vector<float> gaussian(int64_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = nd(rng);
  return x;
}

// Quantizes `rows` rows of `cols` one row at a time (as callers do) and decodes them back.
std::vector<float> roundtrip(GgmlType type, const std::vector<float>& x, int64_t rows,
                             int64_t cols) {
  const auto& tr = traits(type);
  const int64_t row_bytes = cols / tr.block_elems * tr.block_bytes;
  std::vector<uint8_t> q(static_cast<size_t>(rows * row_bytes));
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    quantize_row(type, x.data() + r * cols, q.data() + r * row_bytes, cols);
  }
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row_quant(type, q.data() + r * row_bytes, y.data() + r * cols, cols);
  }
  return y;
}

double rmse(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0.0;
  for (size_t i = 0; i < a.size(); ++i) e += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return a.empty() ? 0.0 : std::sqrt(e / static_cast<double>(a.size()));
}

// The twelve formats of kCases plus MXFP4, whose quantizer is ggml's own (tests/kernels/mxfp4_test.cpp),
// IQ4_NL / IQ4_XS (their accuracy against ggml's quantizers: tests/kernels/quant_llamacpp_test.cpp)
// and the nine grid and ternary formats (tests/kernels/grid_quantize_test.cpp).
TEST(QuantRoundtrip, CoversTheTwentyFourFormats) {
  size_t n_types = 0;
  const GgmlTypeTraits* all = ggml_all_types(&n_types);
  int n_quant = 0;
  for (size_t i = 0; i < n_types; ++i) n_quant += can_quantize(all[i].type) ? 1 : 0;
  EXPECT_EQ(n_quant, 24);
  EXPECT_TRUE(can_quantize(GgmlType::kMXFP4));
  EXPECT_TRUE(can_quantize(GgmlType::kIQ4_NL));
  EXPECT_FALSE(can_quantize(GgmlType::kF16));
  EXPECT_TRUE(can_quantize(GgmlType::kIQ4_XS));
  EXPECT_TRUE(can_quantize(GgmlType::kIQ3_S));
  EXPECT_FALSE(can_quantize(GgmlType::kBF16));
}

TEST(QuantRoundtrip, RmseNoWorseThanLlamaCppOnGaussian) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(ggml_type_name(c.type)));
    const int64_t rows = 24;
    const int64_t cols = 4096;
    const auto x = gaussian(rows * cols, 7);
    const double e = rmse(x, roundtrip(c.type, x, rows, cols));
    EXPECT_LE(e, c.llama_cpp_rmse * 1.02);
    EXPECT_GT(e, c.llama_cpp_rmse * 0.5);  // a lossless result would mean a broken test
  }
}

// Ragged shapes: 1 block, odd row counts, rows of different lengths, scaled data. The error
// must scale with the data (relative bound) and no element may be off by more than a few steps
// of its block (a packing bug puts an element in the wrong slot: errors of the block's range).
TEST(QuantRoundtrip, RaggedRowsAndScales) {
  const int64_t row_blocks[] = {1, 3, 7};
  const int64_t row_counts[] = {1, 2, 5};
  const float sigmas[] = {1e-3f, 1.0f, 30.0f};
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(ggml_type_name(c.type)));
    const int64_t qk = traits(c.type).block_elems;
    uint32_t seed = 100;
    for (int64_t nbk : row_blocks) {
      for (int64_t rows : row_counts) {
        for (float sigma : sigmas) {
          const int64_t cols = nbk * qk;
          const auto x = gaussian(rows * cols, ++seed, sigma);
          const auto y = roundtrip(c.type, x, rows, cols);
          // small samples: allow 40% over the large-sample RMSE
          EXPECT_LE(rmse(x, y), 1.4 * c.llama_cpp_rmse * sigma) << rows << "x" << cols;
          for (size_t i = 0; i < x.size(); ++i) {
            ASSERT_LE(std::fabs(x[i] - y[i]), 12.0 * c.llama_cpp_rmse * sigma + 1e-6)
                << "element " << i << " of " << rows << "x" << cols;
          }
        }
      }
    }
  }
}

TEST(QuantRoundtrip, ZeroAndConstantRows) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(ggml_type_name(c.type)));
    const int64_t n = 2 * traits(c.type).block_elems;
    const std::vector<float> zeros(static_cast<size_t>(n), 0.0f);
    for (float v : roundtrip(c.type, zeros, 1, n)) ASSERT_EQ(v, 0.0f);
    // a constant row is representable exactly up to the fp16/6-bit scale rounding
    for (float k : {0.75f, -2.5f}) {
      const std::vector<float> cst(static_cast<size_t>(n), k);
      for (float v : roundtrip(c.type, cst, 1, n)) ASSERT_NEAR(v, k, std::fabs(k) * 0.02f);
    }
  }
}

// Quantizing decoded values again must land (almost) on the same grid: a decoded block is a
// fixed point of a good quantizer up to scale-rounding effects.
TEST(QuantRoundtrip, IdempotentOnDecodedValues) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(ggml_type_name(c.type)));
    const int64_t cols = 8 * traits(c.type).block_elems;
    const auto x = gaussian(cols * 4, 99);
    const auto y = roundtrip(c.type, x, 4, cols);
    const auto z = roundtrip(c.type, y, 4, cols);
    EXPECT_LE(rmse(y, z), 0.25 * rmse(x, y));
  }
}

TEST(QuantRoundtrip, NonFiniteInputIsMemorySafe) {
  for (const Case& c : kCases) {
    const int64_t n = traits(c.type).block_elems;
    std::vector<float> x = gaussian(n, 5);
    x[1] = NAN;
    x[2] = INFINITY;
    x[3] = -INFINITY;
    (void)roundtrip(c.type, x, 1, n);  // any blocks, but no crash, no UB (run under sanitizers)
  }
}

TEST(QuantRoundtrip, Deterministic) {
  for (const Case& c : kCases) {
    const auto& tr = traits(c.type);
    const int64_t n = 4 * tr.block_elems;
    const auto x = gaussian(n, 11);
    std::vector<uint8_t> a(n / tr.block_elems * tr.block_bytes), b(a.size(), 0xff);
    quantize_row(c.type, x.data(), a.data(), n);
    quantize_row(c.type, x.data(), b.data(), n);
    EXPECT_EQ(a, b) << ggml_type_name(c.type);
  }
}

}  // namespace
}  // namespace ridge::kernels
