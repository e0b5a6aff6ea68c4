// Host tests of the CUDA backend's arithmetic (src/backend/cuda/quant_blocks.h), which nvcc
// compiles into the kernels unchanged: the unit decoders against ridge's reference
// dequantization bit for bit, get_rows' scaling, and the matmul's per-lane partial sums plus the
// warp's butterfly reduction (run here lane by lane) against a double-precision dot product and
// for batch invariance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/quant_blocks.h"
#if RIDGE_HAVE_CUDA
#include "backend/cuda/cuda_memory.h"
#include "backend/cuda/matmul.h"
#endif
#include "kernels/kernels.h"
#include "kernels/quant/blocks.h"
#include "offline/quantize.h"
#include "tensor/fp16.h"

namespace ridge::backend::cuda::testing {
namespace {

constexpr GgmlType kUnitTypes[] = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ4_0,   GgmlType::kQ4_1,
    GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0, GgmlType::kQ2_K,   GgmlType::kQ3_K,
    GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS};

bool is_float_type(GgmlType t) {
  return t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16;
}

uint64_t row_bytes_of(GgmlType t, int64_t cols) {
  const auto& tr = traits(t);
  return static_cast<uint64_t>(cols / tr.block_elems) * tr.block_bytes;
}

// Byte offsets of the fp16 scale fields in one block of a quantized type.
std::vector<int> scale_fields(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_1: case GgmlType::kQ5_1: case GgmlType::kQ4_K: case GgmlType::kQ5_K:
      return {0, 2};
    case GgmlType::kQ2_K: return {80, 82};
    case GgmlType::kQ3_K: return {108};
    case GgmlType::kQ6_K: return {208};
    default: return {0};  // Q4_0, Q5_0, Q8_0, IQ4_NL, IQ4_XS
  }
}

// A row of `cols` values of type t. raw = false: random floats (a few magnitudes) through
// offline::encode_row. raw = true: random bytes, every float (F32/F16/BF16) or fp16 scale field
// made finite by clearing its top exponent bit, so every bit pattern of the quants is covered
// (Q8_0's -128, Q3_K's any scale, subnormal fp16 scales, ...).
std::vector<uint8_t> make_row(GgmlType t, int64_t cols, bool raw, std::mt19937& rng) {
  std::vector<uint8_t> row(row_bytes_of(t, cols));
  if (!raw) {
    std::normal_distribution<float> val(0.0f, 1.0f);
    const float mag = std::ldexp(1.0f, static_cast<int>(rng() % 16) - 8);
    std::vector<float> src(static_cast<size_t>(cols));
    for (float& v : src) v = val(rng) * mag;
    offline::encode_row(t, src.data(), row.data(), cols);
    return row;
  }
  for (uint8_t& b : row) b = static_cast<uint8_t>(rng());
  if (t == GgmlType::kF32) {
    for (size_t k = 0; k + 3 < row.size(); k += 4) {
      if ((row[k + 3] & 0x7f) == 0x7f && (row[k + 2] & 0x80)) row[k + 3] &= 0xbf;
    }
  } else if (t == GgmlType::kBF16) {
    for (size_t k = 0; k + 1 < row.size(); k += 2) {
      if ((row[k + 1] & 0x7f) == 0x7f && (row[k] & 0x80)) row[k + 1] &= 0xbf;
    }
  } else {
    const size_t block = t == GgmlType::kF16 ? 2 : traits(t).block_bytes;
    const std::vector<int> fields = t == GgmlType::kF16 ? std::vector<int>{0} : scale_fields(t);
    for (size_t b = 0; b < row.size(); b += block) {
      for (int f : fields) {
        if ((row[b + f + 1] & 0x7c) == 0x7c) row[b + f + 1] &= 0xbf;  // exponent 31 -> 15
      }
    }
  }
  return row;
}

std::vector<float> ref_dequant(GgmlType t, const std::vector<uint8_t>& row, int64_t cols) {
  std::vector<float> y(static_cast<size_t>(cols));
  kernels::kernels_for(kernels::Isa::kRef).dequantize_row(t, row.data(), y.data(), cols);
  return y;
}

// Index of the first of n floats whose bits differ, or -1.
int first_bit_diff(const float* a, const float* b, int n) {
  for (int k = 0; k < n; ++k) {
    if (f32_to_bits(a[k]) != f32_to_bits(b[k])) return k;
  }
  return -1;
}

std::string describe(GgmlType t, int64_t cols) {
  return std::string(ggml_type_name(t)) + " cols=" + std::to_string(cols);
}

TEST(CudaQuantBlocks, HalfConversionsAreExact) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    ASSERT_EQ(f32_to_bits(fp16_bits_to_float(h)), f32_to_bits(fp16_to_f32(bits))) << std::hex << h;
    ASSERT_EQ(f32_to_bits(bf16_bits_to_float(h)), f32_to_bits(bf16_to_f32(bits))) << std::hex << h;
  }
}

TEST(CudaQuantBlocks, Iq4TableMatchesKernels) {
  for (uint32_t q = 0; q < 16; ++q) EXPECT_EQ(iq4_value(q), kernels::kIq4NlValues[q]) << q;
}

TEST(CudaQuantBlocks, UnitsMatchReferenceDequantization) {
  std::mt19937 rng(20240611);
  for (GgmlType t : kUnitTypes) {
    ASSERT_TRUE(unit_type_supported(t));
    for (int64_t cols : {256, 512, 768, 2304}) {
      for (int rep = 0; rep < 6; ++rep) {
        const bool raw = rep % 2 == 1;
        const std::vector<uint8_t> row = make_row(t, cols, raw, rng);
        const std::vector<float> want = ref_dequant(t, row, cols);
        for (int64_t u = 0; u < units_of(cols); ++u) {
          float got[kUnit];
          dequant_unit(t, row.data(), u, got);
          const int k = first_bit_diff(got, want.data() + u * kUnit, kUnit);
          ASSERT_EQ(k, -1) << describe(t, cols) << " raw=" << raw << " unit " << u << ": got "
                           << got[k] << " want " << want[static_cast<size_t>(u * kUnit + k)];
        }
      }
    }
  }
  EXPECT_FALSE(unit_type_supported(GgmlType::kQ8_1));
  EXPECT_FALSE(unit_type_supported(GgmlType::kIQ2_XXS));
}

// F32/F16/BF16 rows whose length is not a multiple of 32: the last unit holds the rest, zeros
// after it.
TEST(CudaQuantBlocks, FloatRowTails) {
  std::mt19937 rng(7);
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    for (int64_t cols : {1, 37, 100, 129}) {
      const std::vector<uint8_t> row = make_row(t, cols, true, rng);
      const std::vector<float> want = ref_dequant(t, row, cols);
      ASSERT_EQ(units_of(cols), (cols + 31) / 32);
      for (int64_t u = 0; u < units_of(cols); ++u) {
        const int valid = unit_valid(cols, u);
        float got[kUnit];
        dequant_unit(t, row.data(), u, got, valid);
        ASSERT_EQ(first_bit_diff(got, want.data() + u * kUnit, valid), -1) << describe(t, cols) << " unit " << u;
        for (int e = valid; e < kUnit; ++e) ASSERT_EQ(f32_to_bits(got[e]), 0u) << describe(t, cols);
      }
    }
  }
}

// get_rows: every value of the row times the scale, in that order.
TEST(CudaQuantBlocks, ScaledUnitsAreValueTimesScale) {
  std::mt19937 rng(99);
  for (GgmlType t : kUnitTypes) {
    const int64_t cols = is_float_type(t) ? 300 : 512;
    const std::vector<uint8_t> row = make_row(t, cols, false, rng);
    const std::vector<float> want = ref_dequant(t, row, cols);
    for (float scale : {1.0f, 64.0f, 1.0f / 3.0f, -0.0421875f}) {
      with_unit_type(t, [&](auto type) {
        for (int64_t u = 0; u < units_of(cols); ++u) {
          const int valid = unit_valid(cols, u);
          float got[kUnit];
          scaled_unit<decltype(type)::value>(row.data(), u, valid, scale, got);
          for (int e = 0; e < valid; ++e) {
            const float w = want[static_cast<size_t>(u * kUnit + e)] * scale;
            ASSERT_EQ(f32_to_bits(got[e]), f32_to_bits(w)) << describe(t, cols) << " scale " << scale;
          }
        }
      });
    }
  }
}

// The kernel's arithmetic for one weight row and nr <= MT rows of x: lanes 0..31 through
// lane_partials, then the butterfly sum of each x row's 32 partials.
template <GgmlType T, int MT>
void emulate_group(const uint8_t* wrow, int64_t cols, const float* x, int64_t ldx, int nr, float* y) {
  float part[MT][32];
  for (int lane = 0; lane < 32; ++lane) {
    float acc[MT];
    lane_partials<T, MT>(wrow, cols, x, ldx, nr, lane, acc);
    for (int r = 0; r < MT; ++r) {
      part[r][lane] = acc[r];
      if (r >= nr) {
        ASSERT_EQ(f32_to_bits(acc[r]), 0u);
      }
    }
  }
  for (int r = 0; r < nr; ++r) y[r] = xor_tree_sum(part[r]);
}

// emulate_group for a runtime type and group size (1, 2, 4 or 8).
void emulate(GgmlType t, int mt, const uint8_t* wrow, int64_t cols, const float* x, int64_t ldx,
             int nr, float* y) {
  ASSERT_LE(nr, mt);
  with_unit_type(t, [&](auto type) {
    constexpr GgmlType kT = decltype(type)::value;
    switch (mt) {
      case 1: return emulate_group<kT, 1>(wrow, cols, x, ldx, nr, y);
      case 2: return emulate_group<kT, 2>(wrow, cols, x, ldx, nr, y);
      case 4: return emulate_group<kT, 4>(wrow, cols, x, ldx, nr, y);
      default: return emulate_group<kT, 8>(wrow, cols, x, ldx, nr, y);
    }
  });
}

std::vector<float> random_x(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> val(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = val(rng);
  return x;
}

std::vector<int64_t> test_cols(GgmlType t) {
  if (is_float_type(t)) return {37, 256, 1000, 4096};
  if (traits(t).block_elems == 32) return {32, 96, 2304, 4096};
  return {256, 2304, 4096};
}

TEST(CudaMatmulArithmetic, LanesMatchDoublePrecisionDot) {
  std::mt19937 rng(5);
  constexpr int kM = 3;
  for (GgmlType t : kUnitTypes) {
    for (int64_t cols : test_cols(t)) {
      const int64_t ldx = cols + 5;
      const std::vector<float> x = random_x(kM * ldx, rng);
      for (int rep = 0; rep < 4; ++rep) {
        // Raw bytes only for the block formats (random float bits overflow the dot product).
        const std::vector<uint8_t> row = make_row(t, cols, rep % 2 == 1 && !is_float_type(t), rng);
        const std::vector<float> w = ref_dequant(t, row, cols);
        float y[kM];
        emulate(t, 4, row.data(), cols, x.data(), ldx, kM, y);
        for (int i = 0; i < kM; ++i) {
          double dot = 0.0, mag = 0.0;
          for (int64_t c = 0; c < cols; ++c) {
            const double p = static_cast<double>(w[static_cast<size_t>(c)]) * x[static_cast<size_t>(i * ldx + c)];
            dot += p;
            mag += std::fabs(p);
          }
          EXPECT_NEAR(y[i], dot, 1e-5 * mag + 1e-30) << describe(t, cols) << " rep " << rep << " i " << i;
        }
      }
    }
  }
}

// y[i][j] has the same bits whether x row i is alone (m = 1) or in a group of 2, 4, 5 or 8 rows
// with other rows, at any position, whatever ldx.
TEST(CudaMatmulArithmetic, BatchInvariant) {
  std::mt19937 rng(11);
  for (GgmlType t : kUnitTypes) {
    const int64_t cols = is_float_type(t) ? 1000 : 2304;
    const std::vector<uint8_t> row = make_row(t, cols, false, rng);
    const std::vector<float> xi = random_x(cols, rng);
    float alone;
    emulate(t, 1, row.data(), cols, xi.data(), cols, 1, &alone);
    for (int mt : {2, 4, 8}) {
      for (int nr : {2, 3, 5, 8}) {
        if (nr > mt) continue;
        for (int pos = 0; pos < nr; ++pos) {
          const int64_t ldx = cols + pos;  // a different leading dimension each time
          std::vector<float> x = random_x(nr * ldx, rng);
          std::copy(xi.begin(), xi.end(), x.begin() + pos * ldx);
          float y[8];
          emulate(t, mt, row.data(), cols, x.data(), ldx, nr, y);
          ASSERT_EQ(f32_to_bits(y[pos]), f32_to_bits(alone))
              << describe(t, cols) << " mt " << mt << " nr " << nr << " pos " << pos;
        }
      }
    }
  }
}

#if RIDGE_HAVE_CUDA
// On a GPU: launch_matmul's outputs are the host emulation's bits (the kernel's grid, shuffles
// and stores), for every type, m from 1 to 9 (every MT and a tail). Skips without a GPU (fails
// under RIDGE_REQUIRE_CUDA).
TEST(CudaMatmulDevice, BitsEqualTheHostEmulation) {
  auto mem = memory_of(0);
  if (!mem.ok()) {
    if (std::getenv("RIDGE_REQUIRE_CUDA") != nullptr) FAIL() << mem.status().message();
    GTEST_SKIP() << "no GPU here (" << mem.status().message() << ")";
  }
  CudaMemory& dev = **mem;
  std::mt19937 rng(23);
  constexpr int64_t kRows = 37;
  for (GgmlType t : kUnitTypes) {
    const int64_t cols = is_float_type(t) ? 1000 : 2304;
    std::vector<uint8_t> w;
    for (int64_t j = 0; j < kRows; ++j) {
      const std::vector<uint8_t> row = make_row(t, cols, j % 3 == 2 && !is_float_type(t), rng);
      w.insert(w.end(), row.begin(), row.end());
    }
    const uint64_t rb = w.size() / kRows;
    for (int64_t m : {1, 2, 3, 5, 8, 9}) {
      const int64_t ldx = cols + 3, ldy = kRows + 2;
      const std::vector<float> x = random_x(m * ldx, rng);
      auto wd = dev.allocate(w.size(), MemoryUse::kScratch);
      auto xd = dev.allocate(x.size() * sizeof(float), MemoryUse::kScratch);
      auto yd = dev.allocate(static_cast<size_t>(m * ldy) * sizeof(float), MemoryUse::kScratch);
      ASSERT_TRUE(wd.ok() && xd.ok() && yd.ok());
      dev.to_device(wd->get(), w.data(), w.size());
      dev.to_device(xd->get(), x.data(), x.size() * sizeof(float));
      launch_matmul(DeviceMatrix{t, wd->get(), kRows, cols, rb}, static_cast<const float*>(xd->get()), ldx, m,
                    static_cast<float*>(yd->get()), ldy, nullptr);
      RIDGE_CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<float> y(static_cast<size_t>(m * ldy));
      dev.to_host(y.data(), yd->get(), y.size() * sizeof(float));
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < kRows; ++j) {
          float want = 0;
          emulate(t, 1, w.data() + j * rb, cols, x.data() + i * ldx, ldx, 1, &want);
          const float got = y[static_cast<size_t>(i * ldy + j)];
          ASSERT_EQ(0, std::memcmp(&got, &want, sizeof got))
              << describe(t, cols) << " m " << m << " row " << i << " col " << j << ": " << got << " vs " << want;
        }
      }
    }
  }
}
#endif

}  // namespace
}  // namespace ridge::backend::cuda::testing
