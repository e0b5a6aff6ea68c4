// AMX prefill (kernels::amx_enabled, x86_avx512/amx_tiles.h): the AVX-512 matmul gives the same
// bits with the tiles on and off, for every format whose prefill can take them, in both weight
// layouts, for m with and without a tail of m % 16 rows, ragged output rows and 1 or 2 threads;
// and rows alone (m = 1, never on the tiles) give the bits the tiled batch gives them.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"
#include "kernels/weight_layout.h"

namespace ridge::kernels {
namespace {

using testing::random_floats;
using testing::random_weights;
using testing::TestWeights;

// Restores the switch a test found.
class AmxSwitch {
 public:
  AmxSwitch() : was_(amx_enabled()) {}
  ~AmxSwitch() { set_amx_enabled(was_); }
  AmxSwitch(const AmxSwitch&) = delete;
  AmxSwitch& operator=(const AmxSwitch&) = delete;

 private:
  bool was_;
};

std::vector<float> run(const TestWeights& w, WeightLayout layout, const std::vector<float>& x,
                       int64_t m, int threads, bool amx) {
  AmxSwitch keep;
  set_amx_enabled(amx);
  EXPECT_EQ(amx_enabled(), amx);
  WeightView v = w.view();
  v.layout = layout;
  std::vector<float> y(static_cast<size_t>(m * w.rows), -7.0f);
  ThreadPool pool(threads);
  kernels_for(Isa::kAvx512).matmul(v, x.data(), w.cols, m, y.data(), w.rows, pool);
  return y;
}

TEST(AmxPrefill, SwitchStaysOffWithoutAmx) {
  AmxSwitch keep;
  set_amx_enabled(true);
  EXPECT_EQ(amx_enabled(), amx_available());
  set_amx_enabled(false);
  EXPECT_FALSE(amx_enabled());
}

struct Case {
  GgmlType type;
  int64_t cols;
};

TEST(AmxPrefill, SameBitsAsVnni) {
  if (!amx_available()) GTEST_SKIP() << "no AMX-INT8 on this CPU (or not permitted by the OS)";
  const Case cases[] = {{GgmlType::kQ8_0, 96},   {GgmlType::kQ8_0, 1024}, {GgmlType::kQ4_0, 160},
                        {GgmlType::kQ4_1, 160},  {GgmlType::kQ5_0, 160},  {GgmlType::kQ5_1, 160},
                        {GgmlType::kQ4_K, 512},  {GgmlType::kQ5_K, 512},  {GgmlType::kQ6_K, 512},
                        {GgmlType::kQ2_K, 512},  {GgmlType::kQ3_K, 512},  {GgmlType::kMXFP4, 160},
                        {GgmlType::kIQ4_NL, 160}};
  uint32_t seed = 11;
  for (const Case& c : cases) {
    for (int64_t rows : {16, 40, 100}) {
      TestWeights w = random_weights(c.type, rows, c.cols, seed++);
      TestWeights panels = w;
      convert_layout(w.type, WeightLayout::kPanels16, panels.bytes.data(), w.rows, w.cols);
      for (int64_t m : {16, 17, 33, 48}) {
        const auto x = random_floats(static_cast<size_t>(m * c.cols), seed++);
        for (int threads : {1, 2}) {
          const auto want = run(w, WeightLayout::kRows, x, m, threads, false);
          const auto got_rows = run(w, WeightLayout::kRows, x, m, threads, true);
          const auto got_panels = run(panels, WeightLayout::kPanels16, x, m, threads, true);
          ASSERT_EQ(0, std::memcmp(want.data(), got_rows.data(), want.size() * sizeof(float)))
              << ggml_type_name(c.type) << " kRows rows=" << rows << " m=" << m << " t=" << threads;
          ASSERT_EQ(0, std::memcmp(want.data(), got_panels.data(), want.size() * sizeof(float)))
              << ggml_type_name(c.type) << " kPanels16 rows=" << rows << " m=" << m;
        }
        // Row 5 alone (the decode path) against row 5 of the tiled batch.
        const std::vector<float> x5(x.begin() + 5 * c.cols, x.begin() + 6 * c.cols);
        const auto alone = run(w, WeightLayout::kRows, x5, 1, 1, true);
        const auto batch = run(w, WeightLayout::kRows, x, m, 1, true);
        ASSERT_EQ(0, std::memcmp(alone.data(), batch.data() + 5 * rows, alone.size() * sizeof(float)))
            << ggml_type_name(c.type) << " rows=" << rows << " m=" << m;
      }
    }
  }
}

}  // namespace
}  // namespace ridge::kernels
