// The kPanels16 weight layout (kernels/weight_layout.h): converting a Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, K-format, IQ4_NL, IQ4_XS or MXFP4 matrix in place keeps every row's values, and the matmul
// of every ISA that reads it gives the bits it gives on the GGUF row layout, for any m, row range
// and thread count.
#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"
#include "kernels/weight_layout.h"

namespace ridge::kernels {
namespace {

using testing::random_floats;
using testing::random_weights;
using testing::TestWeights;

// The same matrix converted into `layout` (a copy of the bytes).
TestWeights converted(const TestWeights& w, WeightLayout layout) {
  TestWeights c = w;
  convert_layout(w.type, layout, c.bytes.data(), w.rows, w.cols);
  return c;
}

WeightView view_in(const TestWeights& w, WeightLayout layout) {
  WeightView v = w.view();
  v.layout = layout;
  return v;
}

// The types with a kPanels16 layout, and column counts that fit their blocks.
struct LayoutCase {
  GgmlType type;
  std::vector<int64_t> cols;
};
const LayoutCase kLayoutCases[] = {{GgmlType::kQ8_0, {32, 160, 1024}}, {GgmlType::kQ4_0, {32, 160, 1024}},
                             {GgmlType::kQ4_1, {32, 160}},         {GgmlType::kQ5_0, {32, 160}},
                             {GgmlType::kQ5_1, {32, 160}},         {GgmlType::kQ4_K, {256, 768}},
                             {GgmlType::kQ5_K, {256, 768}},        {GgmlType::kQ6_K, {256, 768}},
                             {GgmlType::kQ2_K, {256, 768}},        {GgmlType::kQ3_K, {256, 768}},
                             {GgmlType::kMXFP4, {32, 160, 1024}}, {GgmlType::kIQ4_NL, {32, 160}},
                             {GgmlType::kIQ4_XS, {256, 768}}};

TEST(WeightLayout, DefinedForPanelFormats) {
  EXPECT_TRUE(layout_defined(GgmlType::kQ8_0, WeightLayout::kPanels16));
  EXPECT_TRUE(layout_defined(GgmlType::kQ4_K, WeightLayout::kPanels16));
  EXPECT_TRUE(layout_defined(GgmlType::kQ5_K, WeightLayout::kPanels16));
  EXPECT_TRUE(layout_defined(GgmlType::kF16, WeightLayout::kRows));
  EXPECT_TRUE(layout_defined(GgmlType::kQ5_1, WeightLayout::kPanels16));
  EXPECT_TRUE(layout_defined(GgmlType::kQ6_K, WeightLayout::kPanels16));
  EXPECT_TRUE(layout_defined(GgmlType::kQ2_K, WeightLayout::kPanels16));
  EXPECT_TRUE(layout_defined(GgmlType::kQ3_K, WeightLayout::kPanels16));
  EXPECT_TRUE(layout_defined(GgmlType::kMXFP4, WeightLayout::kPanels16));
  EXPECT_TRUE(layout_defined(GgmlType::kIQ4_XS, WeightLayout::kPanels16));
  EXPECT_FALSE(layout_defined(GgmlType::kQ8_K, WeightLayout::kPanels16));
  EXPECT_FALSE(layout_defined(GgmlType::kF16, WeightLayout::kPanels16));
  // Only AVX-512 reads it; ref and AVX2 keep GGUF's order.
  EXPECT_EQ(kernels_for(Isa::kRef).layout_for(GgmlType::kQ8_0), WeightLayout::kRows);
}

TEST(WeightLayout, RowsReadBackUnchanged) {
  const Kernels& ref = kernels_for(Isa::kRef);
  uint32_t seed = 5;
  for (const LayoutCase& c : kLayoutCases) {
  for (int64_t cols : c.cols) {
    for (int64_t rows : {1, 15, 16, 40, 100}) {  // no panel, one exact panel, ragged tails
      const TestWeights w = random_weights(c.type, rows, cols, seed++);
      const TestWeights p = converted(w, WeightLayout::kPanels16);
      if (rows >= 16) {
        EXPECT_NE(w.bytes, p.bytes);  // the panels did move
      }
      EXPECT_EQ(w.bytes.size(), p.bytes.size());
      std::vector<float> a(static_cast<size_t>(cols)), b(static_cast<size_t>(cols));
      for (int64_t j = 0; j < rows; ++j) {
        dequantize_weight_row(ref, w.view(), j, a.data());
        dequantize_weight_row(ref, view_in(p, WeightLayout::kPanels16), j, b.data());
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
            << ggml_type_name(c.type) << " " << rows << " x " << cols << ", row " << j;
      }
    }
  }
  }
}

class WeightLayoutIsaTest : public ::testing::TestWithParam<Isa> {};

TEST_P(WeightLayoutIsaTest, MatmulBitsEqualRowLayout) {
  if (!isa_supported(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not on this CPU";
  const Kernels& k = kernels_for(GetParam());
  uint32_t seed = 9;
  int tested = 0;
  for (const LayoutCase& c : kLayoutCases) {
  const WeightLayout layout = k.layout_for(c.type);
  if (layout == WeightLayout::kRows) continue;  // this ISA reads the type's rows only
  ++tested;
  for (int64_t cols : c.cols) {
    for (int64_t rows : {16, 40, 100, 256}) {
      const TestWeights w = random_weights(c.type, rows, cols, seed++);
      const TestWeights p = converted(w, layout);
      const WeightView wv = w.view(), pv = view_in(p, layout);
      for (int64_t m : {1, 2, 3, 4, 5, 8, 9, 17, 33}) {
        const std::vector<float> x = random_floats(static_cast<size_t>(m * cols), seed++);
        for (int n_threads : {1, 3}) {
          ThreadPool pool(n_threads);
          std::vector<float> ya(static_cast<size_t>(m * rows)), yb(ya.size());
          k.matmul(wv, x.data(), cols, m, ya.data(), rows, pool);
          k.matmul(pv, x.data(), cols, m, yb.data(), rows, pool);
          ASSERT_EQ(std::memcmp(ya.data(), yb.data(), ya.size() * sizeof(float)), 0)
              << ggml_type_name(c.type) << " " << rows << " x " << cols << ", m " << m << ", " << n_threads << " threads";
          // In a group beside a row-layout matrix: the same bits again.
          std::vector<float> yc(ya.size()), yd(ya.size());
          const MatmulTarget targets[2] = {{&pv, yc.data(), rows}, {&wv, yd.data(), rows}};
          k.matmul_group(std::span<const MatmulTarget>(targets), x.data(), cols, m, pool, nullptr);
          ASSERT_EQ(std::memcmp(ya.data(), yc.data(), ya.size() * sizeof(float)), 0);
          ASSERT_EQ(std::memcmp(ya.data(), yd.data(), ya.size() * sizeof(float)), 0);
        }
      }
    }
  }
  }
  if (tested == 0) GTEST_SKIP() << isa_name(GetParam()) << " reads every type's rows only";
}

INSTANTIATE_TEST_SUITE_P(All, WeightLayoutIsaTest,
                         ::testing::Values(Isa::kRef, Isa::kAvx2, Isa::kAvx512),
                         [](const ::testing::TestParamInfo<Isa>& p) { return std::string(isa_name(p.param)); });

}  // namespace
}  // namespace ridge::kernels
