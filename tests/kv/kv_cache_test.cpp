// KV cache storage per dtype: write -> read round trips against independent scalar references
// (bit layout of GGUF Q8_0, round-to-nearest-even bf16), sizes, config errors, type names.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kv/kv_cache.h"
#include "tensor/fp16.h"

namespace ridge::kv {
namespace {

KvCacheConfig config(kv::KvType type, int64_t head_dim) {
  KvCacheConfig c;
  c.n_layer = 2;
  c.n_head_kv = 3;
  c.head_dim = head_dim;
  c.block_size = 4;
  c.n_blocks = 5;
  c.type = type;
  return c;
}

// Random values with a wide range per 32-block (some blocks all zero, some tiny) so the scales
// vary, plus exact ties for rounding.
std::vector<float> random_row(std::mt19937& rng, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t b = 0; b < n; b += 32) {
    const float mag = std::pow(10.0f, static_cast<float>(static_cast<int>(rng() % 7)) - 4.0f);
    const bool zero = rng() % 9 == 0;
    for (int64_t i = b; i < std::min(n, b + 32); ++i) v[static_cast<size_t>(i)] = zero ? 0.0f : nd(rng) * mag;
  }
  return v;
}

// The nearest bf16 to x (ties to even), found from the two neighbours in double.
float bf16_reference(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint32_t lo_bits = u & 0xffff0000u;
  const uint32_t hi_bits = lo_bits + 0x10000u;
  float lo, hi;
  std::memcpy(&lo, &lo_bits, 4);
  std::memcpy(&hi, &hi_bits, 4);
  const double dlo = std::fabs(static_cast<double>(x) - lo), dhi = std::fabs(static_cast<double>(hi) - x);
  if (dlo < dhi) return lo;
  if (dhi < dlo) return hi;
  return ((lo_bits >> 16) & 1u) == 0 ? lo : hi;
}

// Q8_0 by the GGUF definition: d = amax / 127 stored as fp16, q = round(x / d) half away from
// zero (computed as x * (1/d) like the reference quantizer), value = fp16(d) * q.
struct Q8Ref {
  std::vector<uint16_t> d;
  std::vector<int8_t> q;
  std::vector<float> value;
};
Q8Ref q8_reference(const std::vector<float>& x) {
  Q8Ref r;
  for (size_t b = 0; b < x.size(); b += 32) {
    double amax = 0;
    for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
    const float d = static_cast<float>(amax) / 127.0f;
    const float id = d == 0.0f ? 0.0f : 1.0f / d;
    r.d.push_back(f32_to_fp16(d));
    for (size_t i = b; i < b + 32; ++i) {
      const float s = x[i] * id;
      const float mag = std::floor(std::fabs(s) + 0.5f);
      const auto q = static_cast<int8_t>(s < 0 ? -mag : mag);
      r.q.push_back(q);
      r.value.push_back(fp16_to_f32(r.d.back()) * static_cast<float>(q));
    }
  }
  return r;
}

TEST(KvCache, RowBytesPerType) {
  EXPECT_EQ(kv_row_bytes(kv::KvType::kF32, 128), 512u);
  EXPECT_EQ(kv_row_bytes(kv::KvType::kF16, 128), 256u);
  EXPECT_EQ(kv_row_bytes(kv::KvType::kBF16, 128), 256u);
  EXPECT_EQ(kv_row_bytes(kv::KvType::kQ8_0, 128), 136u);  // 4 blocks of 34 bytes
  EXPECT_EQ(kv_row_bytes(kv::KvType::kQ8_0, 64), 68u);
  EXPECT_EQ(kv_row_bytes(kv::KvType::kQ8_0, 8), 0u);
  EXPECT_EQ(kv_row_bytes(kv::KvType::kFP8, 128), 128u);
  EXPECT_EQ(kv_row_bytes(kv::KvType::kF16, 0), 0u);
  // One block = layers * (K and V) * heads * block_size rows.
  EXPECT_EQ(kv_block_bytes(config(kv::KvType::kQ8_0, 64)), 2u * 2 * 3 * 4 * 68);
  EXPECT_EQ(kv_block_bytes(config(kv::KvType::kBF16, 64)), 2u * 2 * 3 * 4 * 128);
  auto c = config(kv::KvType::kQ8_0, 64);
  auto kv = KvCache::create(c);
  ASSERT_TRUE(kv.ok()) << kv.status().message();
  EXPECT_EQ(kv->total_bytes(), 5u * kv_block_bytes(c));
  EXPECT_EQ(kv->row_bytes(0), 68u);
}

TEST(KvCache, Q8RejectsHeadDimNotMultipleOf32) {
  for (int64_t hd : {8, 48, 100}) {
    const auto c = config(kv::KvType::kQ8_0, hd);
    auto kv = KvCache::create(c);
    ASSERT_FALSE(kv.ok()) << hd;
    EXPECT_NE(kv.status().message().find("multiple of 32"), std::string::npos) << kv.status().message();
    EXPECT_NE(kv.status().message().find(std::to_string(hd)), std::string::npos) << kv.status().message();
    EXPECT_EQ(kv.status().message().find('\n'), std::string::npos);
    EXPECT_EQ(kv_block_bytes(c), 0u);
    EXPECT_FALSE(kv_check_config(c).ok());
    EXPECT_TRUE(kv_check_config(config(kv::KvType::kBF16, hd)).ok());
  }
  // fp8 is a GPU backend's type: one line saying so, not a cache of the wrong size.
  auto fp8 = KvCache::create(config(kv::KvType::kFP8, 64));
  ASSERT_FALSE(fp8.ok());
  EXPECT_NE(fp8.status().message().find("fp8 needs a GPU backend"), std::string::npos) << fp8.status().message();
  EXPECT_EQ(fp8.status().message().find('\n'), std::string::npos);
  EXPECT_EQ(kv_block_bytes(config(kv::KvType::kFP8, 64)), 0u);
}

TEST(KvCache, TypeNames) {
  EXPECT_EQ(*kv_type_from_name("f16"), kv::KvType::kF16);
  EXPECT_EQ(*kv_type_from_name("BF16"), kv::KvType::kBF16);
  EXPECT_EQ(*kv_type_from_name("q8_0"), kv::KvType::kQ8_0);
  EXPECT_EQ(*kv_type_from_name("f32"), kv::KvType::kF32);
  EXPECT_EQ(*kv_type_from_name("FP8"), kv::KvType::kFP8);
  for (kv::KvType t : {kv::KvType::kF32, kv::KvType::kF16, kv::KvType::kBF16, kv::KvType::kQ8_0, kv::KvType::kFP8}) {
    EXPECT_EQ(*kv_type_from_name(kv_type_name(t)), t);
  }
  EXPECT_DOUBLE_EQ(kv_bytes_per_element(kv::KvType::kQ8_0), 34.0 / 32.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_element(kv::KvType::kFP8), 1.0);
  for (const char* bad : {"q4_0", "fp16", "", "f16 "}) {
    auto r = kv_type_from_name(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("q8_0"), std::string::npos);
  }
}

class RoundTrip : public ::testing::TestWithParam<kv::KvType> {};

TEST_P(RoundTrip, MatchesScalarReference) {
  const kv::KvType type = GetParam();
  constexpr int64_t kHd = 64;
  auto c = config(type, kHd);
  auto kv = KvCache::create(c);
  ASSERT_TRUE(kv.ok()) << kv.status().message();
  std::mt19937 rng(7);
  const int64_t kvd = c.n_head_kv * kHd;
  for (int64_t slot : {int64_t{0}, int64_t{5}, int64_t{19}}) {
    for (int64_t layer = 0; layer < c.n_layer; ++layer) {
      const auto k = random_row(rng, kvd), v = random_row(rng, kvd);
      kv->write(layer, slot, k.data(), v.data());
      std::vector<float> rk(static_cast<size_t>(kvd)), rv(static_cast<size_t>(kvd));
      kv->read(layer, slot, rk.data(), rv.data());
      for (const auto& [in, out] : {std::pair{&k, &rk}, std::pair{&v, &rv}}) {
        for (int64_t i = 0; i < kvd; ++i) {
          const float x = (*in)[static_cast<size_t>(i)], y = (*out)[static_cast<size_t>(i)];
          if (type == kv::KvType::kF32) {
            ASSERT_EQ(y, x);
          } else if (type == kv::KvType::kBF16) {
            ASSERT_EQ(y, bf16_reference(x)) << i;
          } else if (type == kv::KvType::kF16) {
            ASSERT_LE(std::fabs(y - x), std::fabs(x) * 0x1p-11f + 0x1p-24f) << i;
          }
        }
        if (type != kv::KvType::kQ8_0) continue;
        const Q8Ref ref = q8_reference(*in);
        for (int64_t i = 0; i < kvd; ++i) ASSERT_EQ((*out)[static_cast<size_t>(i)], ref.value[static_cast<size_t>(i)]) << i;
      }
      // The stored bytes of head 1 are GGUF Q8_0 blocks: fp16 d, then 32 int8.
      if (type != kv::KvType::kQ8_0) continue;
      const Q8Ref ref = q8_reference(k);
      const auto* blk = static_cast<const uint8_t*>(kv->k_block(layer, slot / c.block_size, 1)) +
                        (slot % c.block_size) * kv->row_bytes(0);
      for (int64_t b = 0; b < kHd / 32; ++b) {
        uint16_t d;
        std::memcpy(&d, blk + b * 34, 2);
        EXPECT_EQ(d, ref.d[static_cast<size_t>(kHd / 32 + b)]);
        for (int64_t i = 0; i < 32; ++i) {
          EXPECT_EQ(static_cast<int8_t>(blk[b * 34 + 2 + i]), ref.q[static_cast<size_t>(kHd + b * 32 + i)]);
        }
      }
    }
  }
}

TEST(KvCache, Q8ErrorBound) {
  // |x - value| <= d / 2 per element plus 127 times the fp16 rounding of d (relative 2^-11, or
  // 2^-25 absolute where d is an fp16 subnormal: tiny blocks lose precision, as in GGUF).
  std::mt19937 rng(3);
  std::vector<float> x = random_row(rng, 4096);
  std::vector<uint8_t> q(4096 / 32 * 34);
  std::vector<float> y(4096);
  kv_store_row(kv::KvType::kQ8_0, x.data(), q.data(), 4096);
  kv_load_row(kv::KvType::kQ8_0, q.data(), y.data(), 4096);
  for (size_t b = 0; b < 4096; b += 32) {
    float amax = 0;
    for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    for (size_t i = b; i < b + 32; ++i) {
      const float d = amax / 127.0f;
      EXPECT_LE(std::fabs(x[i] - y[i]), d * 0.5f + 127.0f * std::max(d * 0x1p-11f, 0x1p-25f)) << i;
    }
  }
}

TEST(KvCache, F16StoreIsF32ToFp16OnEveryBitPattern) {
  // Every 61st float bit pattern (subnormals, infinities and NaNs included), in rows of ragged
  // length, so that the vector stores (8 at a time where the CPU has F16C), their NaN fallback
  // and the tails are all compared with the scalar rounding, value by value.
  constexpr uint64_t kStep = 61;
  std::vector<float> row;
  std::vector<uint8_t> out;
  int64_t n = 1;
  uint64_t checked = 0;
  for (uint64_t bits = 0; bits <= 0xffffffffull;) {
    row.clear();
    for (int64_t i = 0; i < n && bits <= 0xffffffffull; ++i, bits += kStep) {
      const auto b = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &b, 4);
      row.push_back(f);
    }
    out.assign(2 * row.size() + 2, 0xa5);
    kv_store_row(kv::KvType::kF16, row.data(), out.data(), static_cast<int64_t>(row.size()));
    for (size_t i = 0; i < row.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, out.data() + 2 * i, 2);
      ASSERT_EQ(h, f32_to_fp16(row[i])) << std::hex << "bits 0x" << [&] { uint32_t b; std::memcpy(&b, &row[i], 4); return b; }();
    }
    ASSERT_EQ(out[2 * row.size()], 0xa5) << "wrote past the row";
    checked += row.size();
    n = n % 37 + 1;
  }
  EXPECT_EQ(checked, 0xffffffffull / kStep + 1);
}

INSTANTIATE_TEST_SUITE_P(Types, RoundTrip,
                         ::testing::Values(kv::KvType::kF32, kv::KvType::kF16, kv::KvType::kBF16, kv::KvType::kQ8_0),
                         [](const auto& p) { return std::string(kv_type_name(p.param)); });

}  // namespace
}  // namespace ridge::kv
