// The reference kernels against independent computations (hand values, the fp16 helpers,
// double-precision dots of the decoded weights).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace ridge::kernels {
namespace {

using testing::random_floats;
using testing::random_weights;

TEST(Isa, NamesRoundTrip) {
  for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
    EXPECT_EQ(isa_from_name(isa_name(isa)), isa);
  }
  EXPECT_FALSE(isa_from_name("sse9").has_value());
  EXPECT_TRUE(isa_supported(Isa::kRef));
  EXPECT_TRUE(isa_supported(best_isa()));
  EXPECT_EQ(kernels_for(best_isa()).isa, best_isa());
}

TEST(RefMatmul, HandExample) {
  // W = [[1, 2, ...], [-1, -1, ...]] (32 cols), x = [1, 0.5, 0, ...].
  std::vector<float> w(64, 0.0f);
  w[0] = 1, w[1] = 2, w[32] = -1, w[33] = -1;
  std::vector<float> x(32, 0.0f);
  x[0] = 1, x[1] = 0.5f;
  ThreadPool pool(1);
  float y[2];
  const WeightView view{GgmlType::kF32, w.data(), 2, 32, 32 * 4};
  kernels_for(Isa::kRef).matmul(view, x.data(), 32, 1, y, 2, pool);
  EXPECT_EQ(y[0], 2.0f);
  EXPECT_EQ(y[1], -1.5f);
}

TEST(Dequantize, FloatTypesMatchConversions) {
  const Kernels& k = kernels_for(Isa::kRef);
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    const auto w = random_weights(type, 1, 96, 3);
    std::vector<float> out(96);
    k.dequantize_row(type, w.bytes.data(), out.data(), 96);
    for (int k2 = 0; k2 < 96; ++k2) {
      uint16_t h = static_cast<uint16_t>(w.bytes[2 * k2] | (w.bytes[2 * k2 + 1] << 8));
      float want = 0;
      if (type == GgmlType::kF32) std::memcpy(&want, w.bytes.data() + 4 * k2, 4);
      if (type == GgmlType::kF16) want = fp16_to_f32(h);
      if (type == GgmlType::kBF16) want = bf16_to_f32(h);
      ASSERT_EQ(out[k2], want) << ggml_type_name(type) << " " << k2;
    }
    // Round trip: values that are exactly representable come back unchanged.
    if (type != GgmlType::kF32) {
      std::vector<uint8_t> bytes(2 * 96);
      for (int k2 = 0; k2 < 96; ++k2) {
        const uint16_t h = type == GgmlType::kF16 ? f32_to_fp16(out[k2]) : f32_to_bf16(out[k2]);
        bytes[2 * k2] = static_cast<uint8_t>(h), bytes[2 * k2 + 1] = static_cast<uint8_t>(h >> 8);
      }
      EXPECT_EQ(bytes, w.bytes) << ggml_type_name(type);
    }
  }
}

TEST(Dequantize, Q8_0IsScaleTimesQuant) {
  // One block by hand: d = 0.5 (fp16 0x3800), q = -127, 1, 2, ...
  std::vector<uint8_t> blk(34, 0);
  blk[0] = 0x00, blk[1] = 0x38;
  for (int k = 0; k < 32; ++k) blk[2 + k] = static_cast<uint8_t>(static_cast<int8_t>(k - 16));
  blk[2] = static_cast<uint8_t>(static_cast<int8_t>(-127));
  float out[32];
  kernels_for(Isa::kRef).dequantize_row(GgmlType::kQ8_0, blk.data(), out, 32);
  EXPECT_EQ(out[0], -63.5f);
  for (int k = 1; k < 32; ++k) EXPECT_EQ(out[k], 0.5f * static_cast<float>(k - 16));
}

TEST(RefMatmul, Q8_0CloseToExactDot) {
  // The only error of the Q8_0 path is the activation quantization (|x - dq| <= d/2 per element,
  // d = amax/127 of its block, plus fp16 rounding of d) and f32 accumulation.
  const Kernels& k = kernels_for(Isa::kRef);
  const int64_t rows = 9, cols = 256;
  const auto w = random_weights(GgmlType::kQ8_0, rows, cols, 11);
  const auto x = random_floats(static_cast<size_t>(cols), 12);
  std::vector<float> y(rows);
  ThreadPool pool(1);
  k.matmul(w.view(), x.data(), cols, 1, y.data(), rows, pool);
  std::vector<float> wf(static_cast<size_t>(cols));
  for (int64_t j = 0; j < rows; ++j) {
    k.dequantize_row(GgmlType::kQ8_0, w.bytes.data() + j * w.row_bytes, wf.data(), cols);
    double exact = 0, bound = 0;
    for (int64_t b = 0; b < cols / 32; ++b) {
      double amax = 0, wabs = 0;
      for (int64_t t = b * 32; t < b * 32 + 32; ++t) {
        exact += static_cast<double>(x[t]) * wf[t];
        amax = std::max(amax, std::fabs(static_cast<double>(x[t])));
        wabs += std::fabs(static_cast<double>(wf[t]));
      }
      bound += (amax / 254.0 + amax * 0x1p-11) * wabs;
    }
    EXPECT_NEAR(y[j], exact, bound + 1e-5) << j;
    EXPECT_NE(y[j], 0.0f);
  }
}

}  // namespace
}  // namespace ridge::kernels
