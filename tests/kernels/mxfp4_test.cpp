// MXFP4 (ggml type 39): the type's traits, the decoder against values written from the OCP MX
// spec, ggml's quantizer on hand-computed blocks (and as "nearest code" on random data), the
// reference dot against a double-precision dot, and every ISA's rows routine bit for bit against
// the reference (ragged panels and block counts, any j0 / j1, m, threads). The comparison with
// llama.cpp's own code is in quant_llamacpp_test.cpp.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/matmul_driver.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/quant/quants.h"
#include "kernels/weight_layout.h"
#include "kernels/x86_avx512/avx512.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

constexpr int64_t kBlockBytes = 17;

// OCP Microscaling Formats (MX) v1.0, 5.3.3: E2M1 = sign (bit 3), 2 exponent bits (bias 1),
// 1 mantissa bit; code -> value.
const double kE2M1[16] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                          -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};
// E8M0: 2^(e - 127). (The spec makes e = 255 NaN; ggml, and so ridge, decode it as 2^128.)
double e8m0(int e) { return std::ldexp(1.0, e - 127); }

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(Mxfp4, TypeTraitsAreGgmls) {
  const auto& t = traits(GgmlType::kMXFP4);
  EXPECT_EQ(static_cast<uint32_t>(t.type), 39u);
  EXPECT_EQ(t.name, "mxfp4");
  EXPECT_EQ(t.block_elems, 32u);
  EXPECT_EQ(t.block_bytes, 17u);  // 1 E8M0 byte + 32 x 4 bits
  EXPECT_EQ(ggml_type_from_name("MXFP4"), GgmlType::kMXFP4);
  EXPECT_EQ(ggml_row_bytes(GgmlType::kMXFP4, 2880), std::optional<uint64_t>(90 * 17));
  EXPECT_FALSE(ggml_row_bytes(GgmlType::kMXFP4, 48).has_value());
  EXPECT_TRUE(can_quantize(GgmlType::kMXFP4));
  for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
    if (isa_supported(isa)) {
      EXPECT_TRUE(kernels_for(isa).supports_matmul(GgmlType::kMXFP4)) << isa_name(isa);
    }
  }
}

// Every code in both nibble positions under every exponent byte.
TEST(Mxfp4, DecodesEveryCodeAndExponentAsTheSpec) {
  for (int e = 0; e < 256; ++e) {
    uint8_t blk[kBlockBytes];
    blk[0] = static_cast<uint8_t>(e);
    // element j < 16: code j (low nibble of qs[j]); element j + 16: code 15 - j (high nibble)
    for (int j = 0; j < 16; ++j) blk[1 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    float y[32];
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
      if (!isa_supported(isa)) continue;
      kernels_for(isa).dequantize_row(GgmlType::kMXFP4, blk, y, 32);
      for (int k = 0; k < 32; ++k) {
        const int code = k < 16 ? k : 31 - k;
        // f32 of the exact value: subnormal for small e (exact: 2 significant bits), inf past
        // f32's range (e = 255 and |E2M1| >= 1, as ggml's f32 product)
        const float want = static_cast<float>(kE2M1[code] * e8m0(e));
        if (code == 8) {  // E2M1 -0: ggml's table holds the integer 0, so +0
          ASSERT_EQ(bits(y[k]), 0u) << "e=" << e << " k=" << k;
        } else {
          ASSERT_EQ(bits(y[k]), bits(want)) << "e=" << e << " k=" << k << ": " << y[k] << " vs " << want;
        }
      }
    }
  }
}

std::vector<uint8_t> quantize(const std::vector<float>& x) {
  std::vector<uint8_t> q(x.size() / 32 * kBlockBytes);
  quantize_row(GgmlType::kMXFP4, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

// ggml's rule (quantize_row_mxfp4_ref) worked by hand: e = floor(log2(amax)) - 2 + 127, each
// element the nearest of the 16 values E2M1 * 2^(e - 127), the lower code on a tie.
TEST(Mxfp4, QuantizesHandComputedBlocksAsGgml) {
  struct BlockCase {
    const char* what;
    std::vector<std::pair<int, float>> x;  // (element, value); the rest 0
    uint8_t e;
    std::vector<std::pair<int, uint8_t>> qs;  // (byte, value); the rest 0
  };
  const float t = std::ldexp(1.0f, -123);
  const std::vector<BlockCase> cases = {
      {"amax 7.9: e 127, steps of 0.5 up to 6; ties to the lower code",
       {{0, 0.0f}, {1, 0.5f}, {2, 1.0f}, {3, 1.5f}, {4, 2.0f}, {5, 3.0f}, {6, 4.0f}, {7, 6.0f},
        {8, -0.0f}, {9, -0.5f}, {10, -1.0f}, {11, -1.5f}, {12, -2.0f}, {13, -3.0f}, {14, -4.0f},
        {15, -6.0f}, {16, 0.25f}, {17, -0.25f}, {18, 1.25f}, {19, -1.25f}, {20, 2.5f},
        {21, -2.5f}, {22, 5.0f}, {23, -5.0f}, {24, 0.3f}, {25, -0.7f}, {26, 5.1f}, {27, 7.9f},
        {28, -7.9f}, {29, 1.74f}, {30, 0.76f}, {31, -3.5f}},
       127,
       {{0, 0x00}, {1, 0x01}, {2, 0x22}, {3, 0xa3}, {4, 0x44}, {5, 0xc5}, {6, 0x66}, {7, 0xe7},
        {8, 0x10}, {9, 0x99}, {10, 0x7a}, {11, 0x7b}, {12, 0xfc}, {13, 0x3d}, {14, 0x2e}, {15, 0xdf}}},
      {"zeros: e 0, codes 0", {}, 0, {}},
      {"amax 10: e 128 (values 0 ... 12)",
       {{0, 8.0f}, {17, -3.0f}, {20, 11.0f}, {5, 10.0f}, {31, 0.5f}},
       128,
       {{0, 0x06}, {1, 0xb0}, {4, 0x70}, {5, 0x06}}},
      {"amax 2^-120: e 5", {{0, 8 * t}, {16, -3 * t}}, 5, {{0, 0xb6}}},
      {"amax 2^-130: floor(log2) - 2 + 127 = -5, stored as x86 converts it, 251; all codes 0",
       {{0, std::ldexp(1.0f, -130)}, {9, -std::ldexp(1.0f, -131)}}, 251, {}},
      {"amax 1.5 * 2^127: e 252", {{0, std::ldexp(1.0f, 127)}, {1, std::ldexp(1.5f, 127)}}, 252,
       {{0, 0x06}, {1, 0x07}}},
      {"amax just below 8: log2f rounds to 3.0, so e 128 (not 127) and it takes the code of 8",
       {{0, std::nextafter(8.0f, 0.0f)}}, 128, {{0, 0x06}}},
  };
  for (const BlockCase& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<float> x(32, 0.0f);
    for (auto [k, v] : c.x) x[k] = v;
    std::vector<uint8_t> want(kBlockBytes, 0);
    want[0] = c.e;
    for (auto [k, v] : c.qs) want[1 + k] = v;
    EXPECT_EQ(quantize(x), want);
  }
}

// On random data of many scales: the exponent puts the block's largest magnitude in [4, 8] steps
// of 2^(e - 127) (8 only where log2f rounds up), and every element decodes to a value nearest to
// it among the 16 of its block (computed here in double from the spec's tables).
TEST(Mxfp4, QuantizerPicksNearestValue) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> scale(-100, 100);
  const int64_t nb = 400;
  std::vector<float> x(static_cast<size_t>(nb * 32));
  for (int64_t b = 0; b < nb; ++b) {
    const float s = std::ldexp(1.0f, scale(rng));
    for (int k = 0; k < 32; ++k) x[b * 32 + k] = nd(rng) * s;
  }
  const auto q = quantize(x);
  std::vector<float> y(x.size());
  dequantize_row_quant(GgmlType::kMXFP4, q.data(), y.data(), static_cast<int64_t>(x.size()));
  for (int64_t b = 0; b < nb; ++b) {
    const int e = q[b * kBlockBytes];
    double amax = 0.0;
    for (int k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(double(x[b * 32 + k])));
    ASSERT_GE(amax / e8m0(e), 4.0) << "block " << b;
    ASSERT_LE(amax / e8m0(e), 8.0) << "block " << b;
    for (int k = 0; k < 32; ++k) {
      const double v = x[b * 32 + k];
      double best = INFINITY;
      for (double c : kE2M1) best = std::min(best, std::fabs(c * e8m0(e) - v));
      ASSERT_LE(std::fabs(double(y[b * 32 + k]) - v), best * (1 + 1e-12)) << "block " << b << " k " << k;
    }
  }
}

// Random MXFP4 rows: random codes, exponents from a list that includes the subnormal scales.
// The odd rows take the sign of each element from `signs` (one per column, as the activations of
// aligned() below): their integer dots are then large (up to 16 bits), so that d * isum is often
// inexact in f32 and an fma where the specification rounds the product (or the reverse) shows.
std::vector<uint8_t> random_rows(int64_t rows, int64_t nb, uint32_t seed, const std::vector<int>& signs) {
  std::mt19937 rng(seed);
  const uint8_t exps[] = {0, 1, 2, 3, 100, 110, 115, 118, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 140};
  std::uniform_int_distribution<int> pick(0, sizeof(exps) - 1), byte(0, 255), magnitude(1, 7);
  std::vector<uint8_t> w(static_cast<size_t>(rows * nb * kBlockBytes));
  for (int64_t j = 0; j < rows; ++j) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* blk = &w[static_cast<size_t>((j * nb + b) * kBlockBytes)];
      blk[0] = exps[pick(rng)];
      for (int k = 0; k < 16; ++k) {
        if (j % 2 == 0) {
          blk[1 + k] = static_cast<uint8_t>(byte(rng));
        } else {
          auto code = [&](int64_t col) { return magnitude(rng) | (signs[col] < 0 ? 8 : 0); };
          blk[1 + k] = static_cast<uint8_t>(code(32 * b + k) | (code(32 * b + k + 16) << 4));
        }
      }
    }
  }
  return w;
}

std::vector<int> random_signs(int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int> s(static_cast<size_t>(cols));
  for (auto& v : s) v = rng() % 2 ? 1 : -1;
  return s;
}

// m rows of activations whose signs follow `signs`, magnitudes uniform in [0.5, 1) (so most
// quantize to 64-127: with the odd rows' codes, isum ~ 2^14, odd as often as even).
std::vector<float> aligned(int64_t m, const std::vector<int>& signs, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mag(0.5f, 1.0f);
  const auto cols = static_cast<int64_t>(signs.size());
  std::vector<float> x(static_cast<size_t>(m * cols));
  for (int64_t k = 0; k < m * cols; ++k) x[k] = static_cast<float>(signs[k % cols]) * mag(rng);
  return x;
}

// Q8_0 activations of x (m rows of cols) as the driver prepares them.
struct Q8Acts {
  std::vector<int8_t> qs;
  std::vector<float> d;
  std::vector<int32_t> sum;
  Acts acts;
  Q8Acts(const std::vector<float>& x, int64_t m, int64_t cols)
      : qs(static_cast<size_t>(m * cols)), d(static_cast<size_t>(m * cols / 32)), sum(d.size()) {
    for (int64_t i = 0; i < m; ++i) {
      quantize_act_row_q8_0(x.data() + i * cols, cols, qs.data() + i * cols, d.data() + i * cols / 32,
                            sum.data() + i * cols / 32);
    }
    acts.m = m;
    acts.cols = cols;
    acts.q8_qs = qs.data();
    acts.q8_d = d.data();
    acts.q8_sum = sum.data();
  }
};

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

MatmulRowsFn rows_of(Isa isa) {
  switch (isa) {
    case Isa::kAvx2: return quant_avx2::rows_mxfp4;
    case Isa::kAvx512: return avx512::rows_mxfp4;
    default: return quant_ref::rows_mxfp4;
  }
}

// The reference against the dequantized operands multiplied in double: within f32 rounding.
TEST(Mxfp4, ReferenceDotMatchesDequantizedOperands) {
  const int64_t rows = 9, nb = 37, cols = nb * 32, m = 3;
  const auto signs = random_signs(cols, 2);
  const auto w = random_rows(rows, nb, 3, signs);
  const auto x = aligned(m, signs, 4);
  const Q8Acts q(x, m, cols);
  const WeightView view{GgmlType::kMXFP4, w.data(), rows, cols, static_cast<uint64_t>(nb * kBlockBytes)};
  std::vector<float> y(static_cast<size_t>(m * rows));
  quant_ref::rows_mxfp4(view, q.acts, 0, rows, y.data(), rows);
  std::vector<float> wf(static_cast<size_t>(cols));
  for (int64_t j = 0; j < rows; ++j) {
    dequantize_row_quant(GgmlType::kMXFP4, w.data() + j * view.row_bytes, wf.data(), cols);
    for (int64_t i = 0; i < m; ++i) {
      double dot = 0.0, mag = 0.0;
      for (int64_t k = 0; k < cols; ++k) {
        const double p = double(wf[k]) * q.d[(i * cols + k) / 32] * q.qs[i * cols + k];
        dot += p;
        mag += std::fabs(p);
      }
      ASSERT_NEAR(y[i * rows + j], dot, 1e-5 * mag + 1e-40) << "row " << j << " x " << i;
    }
  }
}

// Every ISA's rows routine called directly on ragged shapes and arbitrary [j0, j1): the bits of
// the reference (the same integers, the same f32 operations per output in the same order).
TEST(Mxfp4, EveryIsaRowsBitIdenticalToReference) {
  uint32_t seed = 100;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    for (int64_t rows : {1, 7, 8, 9, 16, 17, 33, 40}) {
      for (int64_t nb : {1, 2, 3, 4, 5, 90}) {
        const int64_t cols = nb * 32;
        const auto signs = random_signs(cols, ++seed);
        const auto w = random_rows(rows, nb, ++seed, signs);
        const WeightView view{GgmlType::kMXFP4, w.data(), rows, cols, static_cast<uint64_t>(nb * kBlockBytes)};
        const int64_t m_max = 11;
        const auto x = aligned(m_max, signs, ++seed);
        const Q8Acts all(x, m_max, cols);
        std::vector<float> want(static_cast<size_t>(m_max * rows));
        quant_ref::rows_mxfp4(view, all.acts, 0, rows, want.data(), rows);
        for (int64_t m : {1, 2, 3, 4, 5, 7, 8, 9, 11}) {
          Acts a = all.acts;
          a.m = m;
          // whole, and split at ragged points into [j0, j1) pieces
          for (int64_t step : {rows, int64_t{3}, int64_t{8}, int64_t{13}}) {
            SCOPED_TRACE(std::string(isa_name(isa)) + " rows=" + std::to_string(rows) + " nb=" +
                         std::to_string(nb) + " m=" + std::to_string(m) + " step=" + std::to_string(step));
            std::vector<float> got(want.size(), NAN);
            for (int64_t j0 = 0; j0 < rows; j0 += step) {
              rows_of(isa)(view, a, j0, std::min(rows, j0 + step), got.data(), rows);
            }
            for (int64_t i = 0; i < m_max; ++i) {
              for (int64_t j = 0; j < rows; ++j) {
                const size_t at = static_cast<size_t>(i * rows + j);
                if (i >= m) {
                  ASSERT_TRUE(std::isnan(got[at])) << "wrote row " << i << " past m";
                } else {
                  ASSERT_EQ(bits(got[at]), bits(want[at])) << "x " << i << " row " << j << ": " << got[at] << " vs " << want[at];
                }
              }
            }
          }
        }
      }
    }
  }
}

// AVX-512 reads MXFP4 in the kPanels16 layout (weight_layout.h): converted in place, the rows
// routine on every [j0, j1) the driver can hand it (j0 a multiple of 16) gives ref's bits on the
// GGUF rows, subnormal exponents included, for decode and prefill m.
TEST(Mxfp4, PanelLayoutBitIdenticalToReference) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  ASSERT_EQ(kernels_for(Isa::kAvx512).layout_for(GgmlType::kMXFP4), WeightLayout::kPanels16);
  uint32_t seed = 500;
  for (int64_t rows : {16, 17, 40, 64}) {
    for (int64_t nb : {1, 3, 90}) {
      const int64_t cols = nb * 32;
      const auto signs = random_signs(cols, ++seed);
      const auto w = random_rows(rows, nb, ++seed, signs);
      const WeightView view{GgmlType::kMXFP4, w.data(), rows, cols, static_cast<uint64_t>(nb * kBlockBytes)};
      auto panels = w;
      convert_layout(GgmlType::kMXFP4, WeightLayout::kPanels16, panels.data(), rows, cols);
      ASSERT_NE(panels, w);
      WeightView pview = view;
      pview.data = panels.data();
      pview.layout = WeightLayout::kPanels16;
      const int64_t m_max = 21;
      const auto x = aligned(m_max, signs, ++seed);
      const Q8Acts all(x, m_max, cols);
      std::vector<float> want(static_cast<size_t>(m_max * rows));
      quant_ref::rows_mxfp4(view, all.acts, 0, rows, want.data(), rows);
      for (int64_t m : {1, 2, 5, 8, 9, 21}) {
        Acts a = all.acts;
        a.m = m;
        for (int64_t step : {rows, int64_t{16}, int64_t{32}}) {
          SCOPED_TRACE("rows=" + std::to_string(rows) + " nb=" + std::to_string(nb) + " m=" + std::to_string(m) +
                       " step=" + std::to_string(step));
          std::vector<float> got(want.size(), NAN);
          for (int64_t j0 = 0; j0 < rows; j0 += step) avx512::rows_mxfp4(pview, a, j0, std::min(rows, j0 + step), got.data(), rows);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < rows; ++j) {
              const size_t at = static_cast<size_t>(i * rows + j);
              ASSERT_EQ(bits(got[at]), bits(want[at])) << "x " << i << " row " << j;
            }
          }
        }
      }
    }
  }
}

// Through the kernel front (driver, activation quantizer of the ISA, thread split): every ISA
// gives ref's bits for any m and thread count, and each row of a batch the bits of that row alone.
TEST(Mxfp4, MatmulBitIdenticalAcrossIsasBatchesAndThreads) {
  const int64_t rows = 37, nb = 90, cols = nb * 32, m = 17;
  const auto signs = random_signs(cols, 6);
  const auto w = random_rows(rows, nb, 7, signs);
  const WeightView view{GgmlType::kMXFP4, w.data(), rows, cols, static_cast<uint64_t>(nb * kBlockBytes)};
  const auto x = aligned(m, signs, 8);
  std::vector<float> want(static_cast<size_t>(m * rows));
  {
    ThreadPool pool(1);
    kernels_for(Isa::kRef).matmul(view, x.data(), cols, m, want.data(), rows, pool);
  }
  for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    for (int n_threads : {1, 2}) {
      SCOPED_TRACE(std::string(isa_name(isa)) + " threads=" + std::to_string(n_threads));
      ThreadPool pool(n_threads);
      std::vector<float> got(want.size(), NAN);
      kernels_for(isa).matmul(view, x.data(), cols, m, got.data(), rows, pool);
      for (size_t at = 0; at < want.size(); ++at) ASSERT_EQ(bits(got[at]), bits(want[at])) << at;
      for (int64_t i : {int64_t{0}, int64_t{5}, m - 1}) {
        std::vector<float> alone(static_cast<size_t>(rows), NAN);
        kernels_for(isa).matmul(view, x.data() + i * cols, cols, 1, alone.data(), rows, pool);
        for (int64_t j = 0; j < rows; ++j) ASSERT_EQ(bits(alone[j]), bits(want[i * rows + j])) << i << "," << j;
      }
    }
  }
}

// Quantized weights through the matmul stay close to the float product (a sanity check of the
// whole path: quantizer, layout, dot).
TEST(Mxfp4, QuantizedMatmulCloseToFloatMatmul) {
  const int64_t rows = 24, cols = 1024;
  const auto wf = gaussian(static_cast<size_t>(rows * cols), 9);
  const auto x = gaussian(static_cast<size_t>(cols), 10);
  std::vector<uint8_t> w(static_cast<size_t>(rows * cols / 32 * kBlockBytes));
  const uint64_t row_bytes = static_cast<uint64_t>(cols / 32 * kBlockBytes);
  for (int64_t j = 0; j < rows; ++j) quantize_row(GgmlType::kMXFP4, wf.data() + j * cols, w.data() + j * row_bytes, cols);
  const WeightView view{GgmlType::kMXFP4, w.data(), rows, cols, row_bytes};
  ThreadPool pool(1);
  std::vector<float> y(static_cast<size_t>(rows));
  kernels_for(best_isa()).matmul(view, x.data(), cols, 1, y.data(), rows, pool);
  double err = 0.0, ref = 0.0;
  for (int64_t j = 0; j < rows; ++j) {
    double dot = 0.0;
    for (int64_t k = 0; k < cols; ++k) dot += double(wf[j * cols + k]) * x[k];
    err += (y[j] - dot) * (y[j] - dot);
    ref += dot * dot;
  }
  EXPECT_LT(std::sqrt(err / ref), 0.2);  // 4-bit weights with a power-of-two scale: ~0.1
}

}  // namespace
}  // namespace ridge::kernels
