// Paged attention on every KV type and kernel ISA against a plain double-precision attention over
// the dequantized cache; a token's output is bit-identical alone, in a tile, and on 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "backend/cpu/paged_attention.h"
#include "model/batch.h"

namespace ridge::backend::cpu {
namespace attention_test {

using model::Batch;

constexpr int64_t kHead = 8, kHeadKv = 2, kBs = 16, kMaxCtx = 64;

struct Fixture {
  int64_t hd = 0;
  kv::KvCache kv;
  std::vector<std::vector<int32_t>> tables{{5, 2, 9, 0}, {7, 3, 11}};
  std::vector<int32_t> n_pos{41, 36};  // positions written per sequence
  std::vector<float> q;                // [tokens of `full`, kHead * hd]
  Batch full;                          // seq 0 at positions 30..40, then seq 1 at 35
};

Fixture make_fixture(kv::KvType type, int64_t hd) {
  kv::KvCacheConfig c{1, kHeadKv, hd, kBs, 12, type};
  auto kv = kv::KvCache::create(c);
  RIDGE_CHECK(kv.ok());
  Fixture f{hd, std::move(kv).value()};
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> k(static_cast<size_t>(kHeadKv * hd)), v(k.size());
  for (size_t s = 0; s < 2; ++s) {
    for (int32_t p = 0; p < f.n_pos[s]; ++p) {
      for (auto& x : k) x = nd(rng);
      for (auto& x : v) x = nd(rng);
      f.kv.write(0, int64_t{f.tables[s][static_cast<size_t>(p / kBs)]} * kBs + p % kBs, k.data(), v.data());
    }
  }
  f.full.add_seq(f.tables[0], 41);
  f.full.add_seq(f.tables[1], 36);
  for (int32_t p = 30; p <= 40; ++p) f.full.add_token(0, p, 0, true, kBs);
  f.full.add_token(0, 35, 1, true, kBs);
  f.q.resize(static_cast<size_t>(f.full.n_tokens() * kHead * hd));
  for (auto& x : f.q) x = nd(rng);
  return f;
}

// Sliding window and sinks (gpt-oss), score soft-capping (gemma2); none by default.
struct Variant {
  int64_t window = 0;
  const float* sinks = nullptr;  // [kHead]
  float softcap = 0.0f;
};

// Attention of batch `b` (queries q) on n_threads.
std::vector<float> attend(const Fixture& f, const Batch& b, const float* q, kernels::Isa isa, int n_threads,
                          Variant var = {}) {
  AttentionArgs a;
  std::vector<float> out(static_cast<size_t>(b.n_tokens() * kHead * f.hd), -1.0f);
  const int64_t per = attention_scratch_floats(kHead, kHeadKv, f.hd, kBs, kMaxCtx);
  std::vector<float> scratch(static_cast<size_t>(per * n_threads));
  a.q = q;
  a.out = out.data();
  a.batch = &b;
  a.cache = &f.kv;
  a.kernels = &kernels::kernels_for(isa);
  a.n_head = kHead;
  a.n_head_kv = kHeadKv;
  a.head_dim = f.hd;
  a.scale = 1.0f / std::sqrt(static_cast<float>(f.hd));
  a.scratch = scratch.data();
  a.scratch_per_thread = per;
  a.window = var.window;
  a.sinks = var.sinks;
  a.softcap = var.softcap;
  ThreadPool pool(n_threads);
  paged_attention(a, pool);
  return out;
}

// Straightforward attention in double over the dequantized cache (KvCache::read).
std::vector<double> reference(const Fixture& f, const Batch& b, const float* q, Variant var = {}) {
  const int64_t hd = f.hd, group = kHead / kHeadKv;
  std::vector<double> out(static_cast<size_t>(b.n_tokens() * kHead * hd), 0.0);
  std::vector<float> k(static_cast<size_t>(kHeadKv * hd)), v(k.size());
  for (int64_t t = 0; t < b.n_tokens(); ++t) {
    const auto table = b.block_table(b.seq_index[static_cast<size_t>(t)]);
    const int64_t n = b.positions[static_cast<size_t>(t)] + 1;
    const int64_t first = var.window > 0 ? std::max<int64_t>(0, n - var.window) : 0;
    std::vector<std::vector<float>> ks, vs;
    for (int64_t p = 0; p < n; ++p) {
      f.kv.read(0, int64_t{table[static_cast<size_t>(p / kBs)]} * kBs + p % kBs, k.data(), v.data());
      ks.push_back(k);
      vs.push_back(v);
    }
    for (int64_t h = 0; h < kHead; ++h) {
      const float* qh = q + (t * kHead + h) * hd;
      const int64_t g = h / group;
      std::vector<double> s(static_cast<size_t>(n), 0.0);
      double mx = var.sinks ? var.sinks[h] : -1e300, sum = 0;
      for (int64_t p = first; p < n; ++p) {
        double d = 0;
        for (int64_t i = 0; i < hd; ++i) d += static_cast<double>(qh[i]) * ks[static_cast<size_t>(p)][static_cast<size_t>(g * hd + i)];
        d /= std::sqrt(static_cast<double>(hd));
        if (var.softcap > 0) d = var.softcap * std::tanh(d / var.softcap);
        s[static_cast<size_t>(p)] = d;
        mx = std::max(mx, s[static_cast<size_t>(p)]);
      }
      for (int64_t p = first; p < n; ++p) sum += (s[static_cast<size_t>(p)] = std::exp(s[static_cast<size_t>(p)] - mx));
      if (var.sinks) sum += std::exp(static_cast<double>(var.sinks[h]) - mx);
      double* o = out.data() + (t * kHead + h) * hd;
      for (int64_t p = first; p < n; ++p) {
        for (int64_t i = 0; i < hd; ++i) o[i] += s[static_cast<size_t>(p)] / sum * vs[static_cast<size_t>(p)][static_cast<size_t>(g * hd + i)];
      }
    }
  }
  return out;
}

using Param = std::tuple<kv::KvType, kernels::Isa, int64_t>;
class PagedAttention : public ::testing::TestWithParam<Param> {};

TEST_P(PagedAttention, MatchesReferenceAndIsInvariant) {
  const auto [type, isa, hd] = GetParam();
  if (!kernels::isa_supported(isa)) GTEST_SKIP() << "CPU lacks " << kernels::isa_name(isa);
  if (type == kv::KvType::kQ8_0 && hd % 32 != 0) GTEST_SKIP() << "q8_0 needs head_dim % 32 == 0";
  const Fixture f = make_fixture(type, hd);
  const auto out = attend(f, f.full, f.q.data(), isa, 1);
  const auto ref = reference(f, f.full, f.q.data());
  double max_err = 0;
  for (size_t i = 0; i < out.size(); ++i) max_err = std::max(max_err, std::fabs(out[i] - ref[i]));
  EXPECT_LT(max_err, 2e-5) << "vs double reference on the dequantized cache";

  EXPECT_EQ(attend(f, f.full, f.q.data(), isa, 2), out) << "2 threads";
  // Each token alone (a batch of one, as in decode) gives the same bits as inside its tile.
  const int64_t row = kHead * hd;
  for (int64_t t = 0; t < f.full.n_tokens(); ++t) {
    Batch one;
    const auto s = static_cast<size_t>(f.full.seq_index[static_cast<size_t>(t)]);
    const int32_t pos = f.full.positions[static_cast<size_t>(t)];
    one.add_seq(f.tables[s], pos + 1);
    one.add_token(0, pos, 0, true, kBs);
    const auto alone = attend(f, one, f.q.data() + t * row, isa, 1);
    EXPECT_EQ(0, std::memcmp(alone.data(), out.data() + t * row, static_cast<size_t>(row) * sizeof(float)))
        << "token " << t << " alone";
  }
}

// Scores soft-capped at 1.5 (gemma2's cap * tanh(s / cap)) with a window of 10: the reference
// caps the scaled dot products before its softmax.
TEST_P(PagedAttention, SoftcapMatchesReference) {
  const auto [type, isa, hd] = GetParam();
  if (!kernels::isa_supported(isa)) GTEST_SKIP() << "CPU lacks " << kernels::isa_name(isa);
  if (type == kv::KvType::kQ8_0 && hd % 32 != 0) GTEST_SKIP() << "q8_0 needs head_dim % 32 == 0";
  const Fixture f = make_fixture(type, hd);
  const Variant var{10, nullptr, 1.5f};
  const auto out = attend(f, f.full, f.q.data(), isa, 1, var);
  const auto ref = reference(f, f.full, f.q.data(), var);
  double max_err = 0, moved = 0;
  const auto uncapped = reference(f, f.full, f.q.data(), Variant{10, nullptr, 0.0f});
  for (size_t i = 0; i < out.size(); ++i) {
    max_err = std::max(max_err, std::fabs(out[i] - ref[i]));
    moved = std::max(moved, std::fabs(uncapped[i] - ref[i]));
  }
  EXPECT_LT(max_err, 2e-5) << "vs double reference on the dequantized cache";
  EXPECT_GT(moved, 1e-2) << "the cap must change the result";
  EXPECT_EQ(attend(f, f.full, f.q.data(), isa, 2, var), out) << "2 threads";
}

// A window of 10 positions (the tile at 30..40 skips block 0 and part of block 1) and one sink
// logit per head: the reference applies both to a plain softmax.
TEST_P(PagedAttention, WindowAndSinksMatchReference) {
  const auto [type, isa, hd] = GetParam();
  if (!kernels::isa_supported(isa)) GTEST_SKIP() << "CPU lacks " << kernels::isa_name(isa);
  if (type == kv::KvType::kQ8_0 && hd % 32 != 0) GTEST_SKIP() << "q8_0 needs head_dim % 32 == 0";
  const Fixture f = make_fixture(type, hd);
  const float sinks[kHead] = {0.5f, -1.0f, 2.0f, 0.0f, 3.0f, -2.5f, 1.0f, 4.0f};
  const Variant var{10, sinks};
  const auto out = attend(f, f.full, f.q.data(), isa, 1, var);
  const auto ref = reference(f, f.full, f.q.data(), var);
  double max_err = 0;
  for (size_t i = 0; i < out.size(); ++i) max_err = std::max(max_err, std::fabs(out[i] - ref[i]));
  EXPECT_LT(max_err, 2e-5) << "vs double reference on the dequantized cache";
  const auto plain = reference(f, f.full, f.q.data());
  double moved = 0;
  for (size_t i = 0; i < out.size(); ++i) moved = std::max(moved, std::fabs(plain[i] - ref[i]));
  EXPECT_GT(moved, 1e-2) << "the window and sinks must change the result";
  EXPECT_EQ(attend(f, f.full, f.q.data(), isa, 2, var), out) << "2 threads";
  const int64_t row = kHead * hd;
  for (int64_t t = 0; t < f.full.n_tokens(); ++t) {
    Batch one;
    const auto s = static_cast<size_t>(f.full.seq_index[static_cast<size_t>(t)]);
    const int32_t pos = f.full.positions[static_cast<size_t>(t)];
    one.add_seq(f.tables[s], pos + 1);
    one.add_token(0, pos, 0, true, kBs);
    const auto alone = attend(f, one, f.q.data() + t * row, isa, 1, var);
    EXPECT_EQ(0, std::memcmp(alone.data(), out.data() + t * row, static_cast<size_t>(row) * sizeof(float)))
        << "token " << t << " alone";
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, PagedAttention,
    ::testing::Combine(::testing::Values(kv::KvType::kF32, kv::KvType::kF16, kv::KvType::kBF16, kv::KvType::kQ8_0),
                       ::testing::Values(kernels::Isa::kRef, kernels::Isa::kAvx2, kernels::Isa::kAvx512),
                       ::testing::Values(int64_t{8}, int64_t{40}, int64_t{64}, int64_t{128})),
    [](const auto& p) {
      return std::string(kv::kv_type_name(std::get<0>(p.param))) + "_" +
             std::string(kernels::isa_name(std::get<1>(p.param))) + "_hd" + std::to_string(std::get<2>(p.param));
    });

}  // namespace attention_test
}  // namespace ridge::backend::cpu
