// The Q8_0 activation quantizer against a direct transcription of ggml's rule as llama.cpp runs
// it on x86 (quantize_row_q8_0's AVX path: d = amax/127 stored as fp16, q = x * (127/amax)
// rounded half to even), including exact .5 ties.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/isa_tables.h"
#include "kernels/kernels.h"
#include "kernels/matmul_driver.h"
#include "kernels/quant/act_q8_k.h"

namespace ridge::kernels {
namespace {

void reference_quantize(const float* x, int8_t* q, float* d) {
  float amax = 0.0f;
  for (int k = 0; k < 32; ++k) amax = std::fmax(amax, std::fabs(x[k]));
  const float db = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  for (int k = 0; k < 32; ++k) q[k] = static_cast<int8_t>(std::nearbyint(x[k] * id));  // to even
  *d = fp16_to_f32(f32_to_fp16(db));
}

class ActQuantQ8_0 : public ::testing::TestWithParam<Isa> {};

TEST_P(ActQuantQ8_0, MatchesGgmlRule) {
  if (!isa_supported(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not on this CPU";
  const TypeTable table = GetParam() == Isa::kRef    ? ref_type_table()
                          : GetParam() == Isa::kAvx2 ? avx2_type_table()
                                                     : avx512_type_table();
  std::vector<float> x = testing::random_floats(32 * 64, 5, 3.0f);
  // Block 0: amax 127 so d = 1 and the values themselves are rounded: ties at every half.
  for (int k = 0; k < 32; ++k) x[k] = static_cast<float>(k) - 15.5f;
  x[31] = 127.0f;
  // Block 1: all zero; block 2: tiny values (fp16 d underflows to a subnormal or zero).
  for (int k = 0; k < 32; ++k) x[32 + k] = 0.0f;
  for (int k = 0; k < 32; ++k) x[64 + k] = 1e-9f * static_cast<float>(k - 16);
  // Block 3: huge values (d overflows fp16 to inf); block 4: one value per sign, rest zero.
  for (int k = 0; k < 32; ++k) x[96 + k] = 1e30f * static_cast<float>(k - 16);
  for (int k = 0; k < 32; ++k) x[128 + k] = k == 3 ? -2.0f : (k == 9 ? 1.0f : 0.0f);
  std::vector<int8_t> qs(x.size());
  std::vector<float> d(x.size() / 32);
  std::vector<int32_t> sums(x.size() / 32);
  table.quantize_q8_0(x.data(), static_cast<int64_t>(x.size()), qs.data(), d.data(), sums.data());
  for (size_t b = 0; b < d.size(); ++b) {
    int8_t want_q[32];
    float want_d;
    reference_quantize(x.data() + 32 * b, want_q, &want_d);
    int32_t want_sum = 0;
    for (int k = 0; k < 32; ++k) {
      ASSERT_EQ(qs[32 * b + k], want_q[k]) << "block " << b << " k " << k << " x " << x[32 * b + k];
      want_sum += want_q[k];
    }
    EXPECT_EQ(f32_to_bits(d[b]), f32_to_bits(want_d)) << b;
    EXPECT_EQ(sums[b], want_sum) << b;
  }
  EXPECT_EQ(qs[0], -16);  // -15.5 rounds to even
  EXPECT_EQ(qs[1], -14);  // -14.5 too
  EXPECT_EQ(qs[16], 0);   // 0.5 -> 0
}

// Q8_K (K formats) against a transcription of ggml's quantize_row_q8_K_ref: iscale = -127 / max
// with max the element of largest magnitude (first one on ties), q = nearest-even(iscale * x)
// capped at 127, d = 1 / iscale. Ridge keeps the signs positive: its q and bsums are ggml's
// negated when max > 0 and its d * q equal ggml's exactly.
TEST(ActQuantQ8_K, MatchesGgmlRuleUpToSign) {
  std::vector<float> x = testing::random_floats(256 * 8, 11, 2.0f);
  for (int k = 0; k < 256; ++k) x[k] = static_cast<float>(k % 64) - 31.5f;  // ties at every half
  x[300] = -50.0f;                                                           // negative max
  std::vector<uint8_t> buffer(acts_q8_k_bytes(1, static_cast<int64_t>(x.size())));
  Acts acts;
  quantize_acts_q8_k(x.data(), static_cast<int64_t>(x.size()), 1, static_cast<int64_t>(x.size()),
                     buffer.data(), &acts);
  for (size_t b = 0; b < x.size() / 256; ++b) {
    const float* xb = x.data() + 256 * b;
    float max = 0.0f, amax = 0.0f;
    for (int k = 0; k < 256; ++k) {
      if (std::fabs(xb[k]) > amax) {
        amax = std::fabs(xb[k]);
        max = xb[k];
      }
    }
    const float iscale = -127.0f / max;
    const float d = 1.0f / iscale;
    for (int k = 0; k < 256; ++k) {
      const int q = std::min(127, static_cast<int>(std::nearbyint(iscale * xb[k])));
      const float want = d * static_cast<float>(q);
      const float got = acts.q8k_d[b] * static_cast<float>(acts.q8_qs[256 * b + k]);
      ASSERT_EQ(got, want) << "block " << b << " k " << k;  // (+0 and -0 for q = 0)
      ASSERT_EQ(std::abs(acts.q8_qs[256 * b + k]), std::abs(q)) << "block " << b << " k " << k;
    }
  }
}

// Each ISA's Q8_K row quantizer gives the reference's bytes, on random blocks and on the edge
// blocks: ties at every half, all zero, tiny, huge, lone values, a NaN and an infinity.
class ActQuantQ8_KIsa : public ::testing::TestWithParam<Isa> {};

TEST_P(ActQuantQ8_KIsa, MatchesReferenceBytes) {
  if (!isa_supported(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not on this CPU";
  const TypeTable table = GetParam() == Isa::kRef    ? ref_type_table()
                          : GetParam() == Isa::kAvx2 ? avx2_type_table()
                                                     : avx512_type_table();
  constexpr int64_t kBlocks = 10;
  std::vector<float> x = testing::random_floats(256 * kBlocks, 17, 3.0f);
  for (int k = 0; k < 256; ++k) x[k] = static_cast<float>(k % 64) * (k < 128 ? 1.0f : -1.0f) - 0.5f;
  x[5] = 127.0f;
  for (int k = 0; k < 256; ++k) x[256 + k] = 0.0f;
  for (int k = 0; k < 256; ++k) x[512 + k] = 1e-30f * static_cast<float>(k - 128);
  for (int k = 0; k < 256; ++k) x[768 + k] = 1e30f * static_cast<float>(k - 128);
  for (int k = 0; k < 256; ++k) x[1024 + k] = k == 7 ? -3.0f : (k == 200 ? 1.5f : 0.0f);
  x[1280 + 9] = std::nanf("");
  x[1536 + 40] = INFINITY;
  const auto n = static_cast<int64_t>(x.size());
  std::vector<int8_t> qs(x.size()), want_qs(x.size());
  std::vector<float> d(kBlocks), want_d(kBlocks);
  std::vector<int16_t> bsums(kBlocks * 16), want_bsums(kBlocks * 16);
  table.quantize_q8_k(x.data(), n, qs.data(), d.data(), bsums.data());
  quantize_act_row_q8_k(x.data(), n, want_qs.data(), want_d.data(), want_bsums.data());
  for (int64_t b = 0; b < kBlocks; ++b) {
    EXPECT_EQ(f32_to_bits(d[b]), f32_to_bits(want_d[b])) << "block " << b;
    for (int k = 0; k < 256; ++k) {
      ASSERT_EQ(qs[256 * b + k], want_qs[256 * b + k]) << "block " << b << " k " << k;
    }
    for (int g = 0; g < 16; ++g) ASSERT_EQ(bsums[16 * b + g], want_bsums[16 * b + g]) << b << " " << g;
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, ActQuantQ8_KIsa,
                         ::testing::Values(Isa::kRef, Isa::kAvx2, Isa::kAvx512),
                         [](const auto& param_info) { return std::string(isa_name(param_info.param)); });

INSTANTIATE_TEST_SUITE_P(AllIsas, ActQuantQ8_0,
                         ::testing::Values(Isa::kRef, Isa::kAvx2, Isa::kAvx512),
                         [](const auto& param_info) { return std::string(isa_name(param_info.param)); });

}  // namespace
}  // namespace ridge::kernels
