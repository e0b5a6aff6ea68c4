// The K-format panel GEMMs (AVX-512: x86_avx512/kquant_panel.h, Q2_K..Q6_K; AVX2:
// x86_avx2/kquant_gemm.h, Q4_K..Q6_K) on the shapes their tiling splits: m above the decode limit
// in groups of 4 x rows plus every tail size, two full panels, one single trailing panel and
// partly filled panels (16 rows per panel on AVX-512, 8 on AVX2), several super-blocks, 1 and 2
// threads.
// Each output is checked against the reference rows (quant_dot_test.cpp's tolerance, 2e-5 of
// sum |w x| over the dequantized operands) and bit for bit against the same row computed alone
// (m = 1, the decode path).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace ridge::kernels {
namespace {

using testing::random_floats;
using testing::random_weights;
using testing::TestWeights;

std::vector<float> run(const Kernels& k, const TestWeights& w, const float* x, int64_t m,
                       int n_threads) {
  std::vector<float> y(static_cast<size_t>(m * w.rows), NAN);
  ThreadPool pool(n_threads);
  k.matmul(w.view(), x, w.cols, m, y.data(), w.rows, pool);
  return y;
}

class KQuantGemm : public ::testing::TestWithParam<Isa> {};

TEST_P(KQuantGemm, PrefillTilesMatchReferenceAndDecodeBits) {
  if (!isa_supported(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not on this CPU";
  const Kernels& fast = kernels_for(GetParam());
  const Kernels& ref = kernels_for(Isa::kRef);
  uint32_t seed = 7;
  for (GgmlType type : {GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{64, 768}, {50, 256}, {37, 1280}}) {
      const TestWeights w = random_weights(type, rows, cols, seed++);
      std::vector<float> wf(static_cast<size_t>(rows * cols));
      for (int64_t j = 0; j < rows; ++j) {
        ref.dequantize_row(type, w.bytes.data() + j * w.row_bytes, wf.data() + j * cols, cols);
      }
      const int64_t m = 11;  // 2 groups of 4 and a tail of 3; the prefix sizes below cover 1, 2
      const auto x = random_floats(static_cast<size_t>(m * cols), seed++);
      const auto want = run(ref, w, x.data(), m, 1);
      for (int64_t mm : {2, 3, 5, 6, 11}) {
        for (int threads : {1, 2}) {
          SCOPED_TRACE(std::string(ggml_type_name(type)) + " rows=" + std::to_string(rows) +
                       " cols=" + std::to_string(cols) + " m=" + std::to_string(mm) +
                       " threads=" + std::to_string(threads));
          const auto got = run(fast, w, x.data(), mm, threads);
          for (int64_t i = 0; i < mm; ++i) {
            const auto alone = run(fast, w, x.data() + i * cols, 1, 1);
            for (int64_t j = 0; j < rows; ++j) {
              const float g = got[i * rows + j];
              ASSERT_EQ(f32_to_bits(g), f32_to_bits(alone[j])) << "i=" << i << " j=" << j;
              double mag = 0.0;  // x is not quantized here: the Q8_K rounding adds ~1/254 |x|
              for (int64_t c = 0; c < cols; ++c) {
                mag += std::fabs(static_cast<double>(wf[j * cols + c]) * x[i * cols + c]);
              }
              ASSERT_NEAR(g, want[i * rows + j], 2e-5 * mag) << "i=" << i << " j=" << j;
            }
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, KQuantGemm, ::testing::Values(Isa::kAvx2, Isa::kAvx512),
                         [](const ::testing::TestParamInfo<Isa>& p) { return std::string(isa_name(p.param)); });

}  // namespace
}  // namespace ridge::kernels
