// The AVX-512 and AVX2 SwiGLU (polynomial e^x) against silu computed in double, and on the edge
// values against the scalar loop; the GeGLU of gemma against the tanh GELU in double.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "model/ffn.h"
#include "backend/cpu/activations.h"
#include "backend/cpu/isa_table.h"
#include "model/ops.h"
#include "tensor/fp16.h"

namespace ridge::backend::cpu {
namespace swiglu_test {

using model::Batch;

double silu_mul(double g, double u) { return g / (1.0 + std::exp(-g)) * u; }

class SwigluIsa : public ::testing::TestWithParam<kernels::Isa> {
 protected:
  void SetUp() override {
    if (!kernels::isa_supported(GetParam())) GTEST_SKIP() << kernels::isa_name(GetParam()) << " not on this CPU";
    fn_ = isa_table(GetParam()).swiglu;
  }
  SwigluFn fn_ = nullptr;
};

TEST_P(SwigluIsa, WithinFourUlpsOfDoubleOnEveryTailLength) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> val(-80.0f, 80.0f);
  for (int64_t n = 0; n <= 50; ++n) {
    std::vector<float> g(static_cast<size_t>(n)), u(g.size()), out(g.size() + 1, -7.0f);
    for (auto& v : g) v = val(rng);
    for (auto& v : u) v = val(rng) / 8.0f;
    fn_(g.data(), u.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double want = silu_mul(g[static_cast<size_t>(i)], u[static_cast<size_t>(i)]);
      ASSERT_LE(std::fabs(out[static_cast<size_t>(i)] - want), 4 * 0x1p-24 * std::fabs(want) + 1e-37)
          << "n=" << n << " g=" << g[static_cast<size_t>(i)];
    }
    EXPECT_EQ(out[static_cast<size_t>(n)], -7.0f) << "wrote past n=" << n;
  }
}

TEST_P(SwigluIsa, EdgeValuesAsTheScalarLoop) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const std::vector<float> g = {0.0f, -0.0f, 1e30f, -1e30f, kInf, -kInf, std::nanf(""), 88.0f,
                                -88.0f, 1e-30f, -1e-30f, 0.5f, -0.5f, 20.0f, -20.0f, 3.0f};
  const std::vector<float> u(g.size(), 2.0f);
  std::vector<float> fast(g.size()), slow(g.size());
  fn_(g.data(), u.data(), fast.data(), static_cast<int64_t>(g.size()));
  swiglu(g.data(), u.data(), slow.data(), static_cast<int64_t>(g.size()));
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(slow[i])) {
      EXPECT_TRUE(std::isnan(fast[i])) << "g=" << g[i];
    } else if (std::isinf(slow[i]) || slow[i] == 0.0f) {
      EXPECT_EQ(fast[i], slow[i]) << "g=" << g[i];
    } else {
      EXPECT_NEAR(fast[i], slow[i], 4 * 0x1p-24 * std::fabs(slow[i])) << "g=" << g[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SimdIsas, SwigluIsa, ::testing::Values(kernels::Isa::kAvx2, kernels::Isa::kAvx512),
                         [](const auto& p) { return std::string(kernels::isa_name(p.param)); });

}  // namespace swiglu_test
}  // namespace ridge::backend::cpu

namespace ridge::backend::cpu {
namespace swiglu_test {

using model::geglu;

// GeGLU (gemma) as llama.cpp computes it on CPUs: the tanh GELU of the gate at its f16 rounding,
// itself rounded to f16, times up; 0 and gate * up past -10 / 10. Checked against the tanh GELU
// in double: within f16 rounding of input and output.
double gelu_tanh(double x) { return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * x * (1.0 + 0.044715 * x * x))); }

TEST(Geglu, TanhGeluAtF16AsGgml) {
  EXPECT_EQ(geglu(-10.0f, 3.0f), 0.0f);
  EXPECT_EQ(geglu(-25.0f, 3.0f), 0.0f);
  EXPECT_EQ(geglu(10.0f, 3.0f), 30.0f);
  EXPECT_EQ(geglu(12.5f, -2.0f), -25.0f);
  EXPECT_EQ(geglu(0.0f, 5.0f), 0.0f);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> val(-9.99f, 9.99f);
  for (int i = 0; i < 20000; ++i) {
    const float g = val(rng);
    const float y = geglu(g, 1.0f);
    // An f16 value (the table's), close to the double GELU: the input moves by up to 2^-11
    // relative (slope <= 1.13), the output by another 2^-11.
    EXPECT_EQ(y, fp16_to_f32(f32_to_fp16(y))) << g;
    const double want = gelu_tanh(g);
    EXPECT_NEAR(y, want, 1.2 * std::ldexp(std::fabs(g), -11) + std::ldexp(std::fabs(want), -11) + 1e-7) << g;
    EXPECT_EQ(geglu(g, -3.0f), y * -3.0f) << g;
  }
}

}  // namespace swiglu_test
}  // namespace ridge::backend::cpu
