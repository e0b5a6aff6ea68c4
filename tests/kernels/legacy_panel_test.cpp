// The AVX-512 panel kernel on the legacy formats Q4_0, Q4_1, Q5_0, Q5_1 (x86_avx512/legacy_q.cpp,
// panel_q8.h), on both its paths: m <= 8 (blocks loaded straight from the rows) and m > 8 (two
// packed panels against 6 x rows, plus the tails of both). Against the reference rows routine
// (kernels/quant/ref_rows.cpp) within quant_dot_test's bound, 2e-5 * sum |w x| (same integers,
// f32 terms summed in another order), and bitwise: every row of a batch equal to that row alone,
// for 1 and 2 threads. Shapes: ragged panels (13, 40 = a partial second panel, 67 = an odd last
// panel), block counts 1, 3 (no line-aligned prefetch step) and 32.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace ridge::kernels {
namespace {

using testing::random_floats;
using testing::random_weights;

const GgmlType kLegacy[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1};

std::vector<float> run(Isa isa, const testing::TestWeights& w, const std::vector<float>& x,
                       int64_t m, int n_threads) {
  ThreadPool pool(n_threads);
  std::vector<float> y(static_cast<size_t>(m * w.rows), NAN);
  kernels_for(isa).matmul(w.view(), x.data(), w.cols, m, y.data(), w.rows, pool);
  return y;
}

TEST(LegacyPanel, BothPathsMatchReferenceAndAreBatchInvariant) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  uint32_t seed = 11;
  for (GgmlType type : kLegacy) {
    for (auto [rows, nb] : {std::pair<int64_t, int64_t>{13, 3}, {40, 1}, {67, 32}}) {
      const int64_t cols = 32 * nb;
      const testing::TestWeights w = random_weights(type, rows, cols, seed++);
      std::vector<float> wf(static_cast<size_t>(rows * cols));
      for (int64_t j = 0; j < rows; ++j) {
        kernels_for(Isa::kRef).dequantize_row(type, w.bytes.data() + j * w.row_bytes,
                                              wf.data() + j * cols, cols);
      }
      const int64_t m = 17;  // 2 x 6 rows + a tail of 5 on the packed path
      const auto x = random_floats(static_cast<size_t>(m * cols), seed++);
      const auto want = run(Isa::kRef, w, x, m, 1);
      const auto got = run(Isa::kAvx512, w, x, m, 1);
      const auto got2 = run(Isa::kAvx512, w, x, m, 2);
      for (int64_t i = 0; i < m; ++i) {
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " rows=" + std::to_string(rows) +
                     " cols=" + std::to_string(cols) + " i=" + std::to_string(i));
        const std::vector<float> xi(x.begin() + i * cols, x.begin() + (i + 1) * cols);
        const auto alone = run(Isa::kAvx512, w, xi, 1, 1);
        const auto alone2 = run(Isa::kAvx512, w, xi, 1, 2);
        for (int64_t j = 0; j < rows; ++j) {
          double mag = 0.0;
          for (int64_t k = 0; k < cols; ++k) mag += std::fabs(double(wf[j * cols + k]) * xi[k]);
          const size_t at = static_cast<size_t>(i * rows + j);
          ASSERT_NEAR(got[at], want[at], 2e-5 * mag) << "j=" << j;
          ASSERT_EQ(f32_to_bits(got[at]), f32_to_bits(alone[j])) << "j=" << j;
          ASSERT_EQ(f32_to_bits(got[at]), f32_to_bits(got2[at])) << "j=" << j;
          ASSERT_EQ(f32_to_bits(got[at]), f32_to_bits(alone2[j])) << "j=" << j;
        }
      }
      // m = 9: the packed path as one group of 6 rows and a tail of 3.
      const std::vector<float> x9(x.begin(), x.begin() + 9 * cols);
      const auto got9 = run(Isa::kAvx512, w, x9, 9, 1);
      for (size_t at = 0; at < got9.size(); ++at) {
        ASSERT_EQ(f32_to_bits(got9[at]), f32_to_bits(got[at])) << ggml_type_name(type) << " " << at;
      }
    }
  }
}

}  // namespace
}  // namespace ridge::kernels
