// Every ISA's matmul against the scalar reference, plus batch and thread invariance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <algorithm>
#include <span>
#include <utility>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace ridge::kernels {
namespace {

using testing::random_floats;
using testing::random_weights;
using testing::TestWeights;

constexpr GgmlType kTypes[] = {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0};

std::vector<float> run(const Kernels& k, const TestWeights& w, const std::vector<float>& x,
                       int64_t ldx, int64_t m, int n_threads, int64_t ldy = -1) {
  if (ldy < 0) ldy = w.rows;
  std::vector<float> y(static_cast<size_t>(m * ldy + 1), -7.0f);  // sentinel
  ThreadPool pool(n_threads);
  k.matmul(w.view(), x.data(), ldx, m, y.data(), ldy, pool);
  return y;
}

// Bound on |fast - ref| for the float types: the ISA sums each dot product in f32 over at most
// K/8 + 3 sequential additions per lane (8-lane AVX2; 16-lane AVX-512 is tighter) while ref sums
// in double; relative to sum_k |x_k w_k| the error is below (K/8 + 4) * 2^-24.
double float_tolerance(int64_t cols, double abs_dot) {
  return (static_cast<double>(cols) / 8.0 + 4.0) * 0x1p-24 * abs_dot + 1e-30;
}

class MatmulIsaTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not on this CPU";
  }
  const Kernels& isa() const { return kernels_for(GetParam()); }
};

TEST_P(MatmulIsaTest, MatchesRef) {
  const Kernels& ref = kernels_for(Isa::kRef);
  uint32_t seed = 1;
  for (GgmlType type : kTypes) {
    ASSERT_TRUE(isa().supports_matmul(type));
    for (int64_t cols : {32, 96, 4096 + 32}) {
      for (int64_t rows : {1, 7, 40, 130}) {  // 40: a partly filled second Q8_0 panel
        const TestWeights w = random_weights(type, rows, cols, seed++);
        std::vector<float> wf(static_cast<size_t>(rows * cols));
        for (int64_t j = 0; j < rows; ++j) {
          ref.dequantize_row(type, w.bytes.data() + j * w.row_bytes, wf.data() + j * cols, cols);
        }
        for (int64_t m : {0, 1, 3, 17, 64}) {
          const int64_t ldx = cols + 5;
          const auto x = random_floats(static_cast<size_t>(m * ldx + 1), seed++);
          const auto got = run(isa(), w, x, ldx, m, 2);
          const auto want = run(ref, w, x, ldx, m, 1);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < rows; ++j) {
              const float g = got[i * rows + j];
              const float r = want[i * rows + j];
              if (type == GgmlType::kQ8_0) {
                // Q8_0's accumulation order is part of its specification: bit-identical.
                ASSERT_EQ(f32_to_bits(g), f32_to_bits(r))
                    << ggml_type_name(type) << " m=" << m << " cols=" << cols << " i=" << i
                    << " j=" << j << " got " << g << " want " << r;
                continue;
              }
              double abs_dot = 0;
              for (int64_t k = 0; k < cols; ++k) {
                abs_dot += std::fabs(static_cast<double>(x[i * ldx + k]) * wf[j * cols + k]);
              }
              ASSERT_LE(std::fabs(static_cast<double>(g) - r), float_tolerance(cols, abs_dot))
                  << ggml_type_name(type) << " m=" << m << " cols=" << cols << " rows=" << rows
                  << " i=" << i << " j=" << j << " got " << g << " want " << r;
            }
          }
          EXPECT_EQ(got[m * rows], -7.0f);  // nothing written past the output
        }
      }
    }
  }
}

// y[i] of a batch must be bit-identical to the same row computed alone (m = 1), and independent
// of the thread count.
TEST_P(MatmulIsaTest, BatchAndThreadInvariant) {
  uint32_t seed = 100;
  const GgmlType block_types[] = {GgmlType::kQ4_0, GgmlType::kQ5_1, GgmlType::kQ2_K,
                                  GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
                                  GgmlType::kQ6_K, GgmlType::kMXFP4, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS};
  std::vector<GgmlType> types(std::begin(kTypes), std::end(kTypes));
  types.insert(types.end(), std::begin(block_types), std::end(block_types));
  for (GgmlType type : types) {
    SCOPED_TRACE(std::string(ggml_type_name(type)));
    // 256-element blocks need cols % 256 == 0 (the K formats).
    const int64_t small_cols = traits(type).block_elems == 256 ? 256 : 96;
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{130, small_cols}, {40, 4096 + 256}}) {
      // m = 16 + 1 .. 16 + 3: every remainder of kernels that take x rows 4 at a time.
      for (int64_t m = 17; m <= 19; ++m) {
        const TestWeights w = random_weights(type, rows, cols, seed++);
        const auto x = random_floats(static_cast<size_t>(m * cols), seed++);
        const auto batch1 = run(isa(), w, x, cols, m, 1);
        const auto batch2 = run(isa(), w, x, cols, m, 2);
        for (int64_t i = 0; i < m; ++i) {
          const std::vector<float> xi(x.begin() + i * cols, x.begin() + (i + 1) * cols);
          for (int threads : {1, 2}) {
            const auto single = run(isa(), w, xi, cols, 1, threads);
            for (int64_t j = 0; j < rows; ++j) {
              ASSERT_EQ(f32_to_bits(single[j]), f32_to_bits(batch1[i * rows + j]))
                  << ggml_type_name(type) << " cols=" << cols << " i=" << i << " j=" << j;
            }
          }
          for (int64_t j = 0; j < rows; ++j) {
            ASSERT_EQ(f32_to_bits(batch1[i * rows + j]), f32_to_bits(batch2[i * rows + j]))
                << ggml_type_name(type) << " 1 vs 2 threads, i=" << i << " j=" << j;
          }
        }
      }
    }
  }
}

// matmul_group: each output bit-identical to its own matmul, over mixed types (different
// activation formats and row grains in one group), any m and thread count; the epilogue sees
// every row exactly once, after that row is final in every matrix of the group.
TEST_P(MatmulIsaTest, GroupMatchesSeparateMatmulsAndEpilogueCoversEveryRow) {
  const int64_t cols = 512;
  uint32_t seed = 300;
  const GgmlType groups[][3] = {{GgmlType::kQ4_K, GgmlType::kQ4_K, GgmlType::kQ6_K},
                                {GgmlType::kQ8_0, GgmlType::kF16, GgmlType::kQ4_0}};
  for (const auto& types : groups) {
    for (int64_t rows : {int64_t{1}, int64_t{40}, int64_t{131}}) {
      std::vector<TestWeights> ws;
      for (GgmlType t : types) ws.push_back(random_weights(t, rows, cols, seed++));
      for (int64_t m : {1, 5, 33}) {
        const auto x = random_floats(static_cast<size_t>(m * cols), seed++);
        for (int threads : {1, 2, 3}) {
          SCOPED_TRACE(::testing::Message() << ggml_type_name(types[0]) << " rows=" << rows
                                            << " m=" << m << " threads=" << threads);
          std::vector<std::vector<float>> ys(3, std::vector<float>(static_cast<size_t>(m * rows)));
          std::vector<WeightView> views;
          for (const auto& w : ws) views.push_back(w.view());
          const MatmulTarget targets[] = {{&views[0], ys[0].data(), rows},
                                          {&views[1], ys[1].data(), rows},
                                          {&views[2], ys[2].data(), rows}};
          struct Seen {
            std::vector<std::vector<float>>* ys;
            std::vector<int> hits;
            int64_t m, rows;
            bool all_final = true;
          } seen{&ys, std::vector<int>(static_cast<size_t>(rows)), m, rows};
          // Records each row range and whether its values were already written (the outputs
          // start as NaN, which no matmul of finite inputs produces).
          auto record = [](void* ctx, int64_t j0, int64_t j1) {
            auto& s = *static_cast<Seen*>(ctx);
            for (int64_t j = j0; j < j1; ++j) {
              ++s.hits[static_cast<size_t>(j)];
              for (const auto& y : *s.ys) {
                for (int64_t i = 0; i < s.m; ++i) {
                  if (std::isnan(y[static_cast<size_t>(i * s.rows + j)])) s.all_final = false;
                }
              }
            }
          };
          for (auto& y : ys) std::fill(y.begin(), y.end(), std::nanf(""));
          const MatmulEpilogue epilogue{+record, &seen};
          ThreadPool pool(threads);
          isa().matmul_group(std::span(targets), x.data(), cols, m, pool, &epilogue);
          for (int64_t j = 0; j < rows; ++j) ASSERT_EQ(seen.hits[static_cast<size_t>(j)], 1) << "row " << j;
          EXPECT_TRUE(seen.all_final);
          for (size_t t = 0; t < 3; ++t) {
            const auto want = run(isa(), ws[t], x, cols, m, threads);
            for (int64_t k = 0; k < m * rows; ++k) {
              ASSERT_EQ(f32_to_bits(ys[t][static_cast<size_t>(k)]), f32_to_bits(want[static_cast<size_t>(k)]))
                  << "matrix " << t << " element " << k;
            }
          }
        }
      }
    }
  }
}

TEST_P(MatmulIsaTest, StridedOutputLeavesPaddingAlone) {
  const TestWeights w = random_weights(GgmlType::kF16, 7, 64, 7);
  const auto x = random_floats(3 * 64, 8);
  const auto y = run(isa(), w, x, 64, 3, 2, /*ldy=*/10);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 7; j < 10; ++j) EXPECT_EQ(y[i * 10 + j], -7.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, MatmulIsaTest,
                         ::testing::Values(Isa::kRef, Isa::kAvx2, Isa::kAvx512),
                         [](const auto& param_info) { return std::string(isa_name(param_info.param)); });

}  // namespace
}  // namespace ridge::kernels
