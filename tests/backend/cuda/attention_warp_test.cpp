// The CUDA attention kernel's warp code (attention_warp.h), run on the host by 32 threads per
// warp (host_warp.h) over a paged KV cache in host memory: against a double-precision softmax
// attention of the positions each token sees, for every KV type, a head_dim that is not a
// multiple of 32, grouped heads, block tables out of order, a sliding window, sinks, softcap and
// the gated output. Every output is written (NaN before). A row's bits are the same alone or
// among the step's other rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if RIDGE_HAVE_CUDA
#include "backend/cuda/attention_warp.h"
#include "backend/cuda/cuda_backend.h"
#include "host_warp.h"
#include "kv/kv_cache.h"
#include "model/batch.h"

namespace ridge::backend::cuda::testing {
namespace {

struct Variant {
  kv::KvType type = kv::KvType::kF16;
  int64_t head_dim = 64;
  int64_t window = 0;
  bool sinks = false;
  float softcap = 0.0f;
  bool gate = false;
  std::string name;
};

constexpr int64_t kHeads = 4, kKvHeads = 2, kBlock = 16;

// Runs every (token, head) of the step through attend_one on host warps.
void run_attention(const AttentionArgs& a) {
  for (int64_t t = 0; t < a.step.n_tokens; ++t) {
    for (int64_t h = 0; h < a.n_head; ++h) {
      std::vector<float> q_shared(kMaxHeadDim);
      HostWarp::run([&](HostWarp& w) { attend_one(a, t, h, w, q_shared.data()); });
    }
  }
}

class CudaAttentionWarp : public ::testing::TestWithParam<Variant> {};

TEST_P(CudaAttentionWarp, MatchesADoubleSoftmax) {
  const Variant v = GetParam();
  const int64_t hd = v.head_dim, qd = kHeads * hd;
  kv::KvCacheConfig cfg;
  cfg.n_layer = 1;
  cfg.n_head_kv = kKvHeads;
  cfg.head_dim = hd;
  cfg.block_size = kBlock;
  cfg.n_blocks = 8;
  cfg.type = v.type;
  auto cache = kv::KvCache::create(cfg);
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  // Sequence 0: 37 positions in blocks 5, 1, 6; sequence 1: 9 positions in block 3.
  const std::vector<std::vector<int32_t>> tables = {{5, 1, 6}, {3}};
  const std::vector<int32_t> lengths = {37, 9};
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (size_t s = 0; s < tables.size(); ++s) {
    for (int32_t p = 0; p < lengths[s]; ++p) {
      std::vector<float> k(static_cast<size_t>(kKvHeads * hd)), val(k.size());
      for (float& x : k) x = nd(rng);
      for (float& x : val) x = nd(rng);
      const int64_t slot = tables[s][static_cast<size_t>(p / kBlock)] * kBlock + p % kBlock;
      cache->write(0, slot, k.data(), val.data());
    }
  }
  // The step: sequence 0's positions 34..36 and sequence 1's last.
  model::Batch b;
  b.add_seq(tables[0], lengths[0]);
  b.add_seq(tables[1], lengths[1]);
  for (int32_t p : {34, 35, 36}) b.add_token(1, p, 0, true, kBlock);
  b.add_token(1, 8, 1, true, kBlock);
  const int64_t n = b.n_tokens();
  std::vector<float> q(static_cast<size_t>(n * qd)), gate(static_cast<size_t>(n * 2 * qd)), sinks(kHeads);
  for (float& x : q) x = nd(rng);
  for (float& x : gate) x = nd(rng);
  for (float& x : sinks) x = nd(rng);
  std::vector<float> out(q.size(), std::numeric_limits<float>::quiet_NaN());

  AttentionArgs a;
  a.step = StepView{n, b.positions.data(), b.seq_index.data(), b.block_offsets.data()};
  a.block_ids = b.block_ids.data();
  a.kv = kv_layer_of(*cache, 0);
  a.q = q.data();
  a.out = out.data();
  a.q_gate = v.gate ? gate.data() : nullptr;
  a.sinks = v.sinks ? sinks.data() : nullptr;
  a.n_head = kHeads;
  a.n_head_kv = kKvHeads;
  a.head_dim = hd;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  a.window = v.window;
  a.softcap = v.softcap;
  run_attention(a);

  double worst = 0, biggest = 0;
  std::vector<float> kr(static_cast<size_t>(kKvHeads * hd)), vr(kr.size());
  for (int64_t t = 0; t < n; ++t) {
    const int32_t seq = b.seq_index[static_cast<size_t>(t)];
    const int64_t pos = b.positions[static_cast<size_t>(t)];
    const int64_t first = v.window > 0 ? std::max<int64_t>(0, pos - v.window + 1) : 0;
    for (int64_t h = 0; h < kHeads; ++h) {
      const int64_t kvh = h / (kHeads / kKvHeads);
      std::vector<double> s, o(static_cast<size_t>(hd), 0.0);
      double mx = v.sinks ? sinks[static_cast<size_t>(h)] : -INFINITY;
      std::vector<std::vector<float>> vals;
      for (int64_t j = first; j <= pos; ++j) {
        const int64_t slot = tables[static_cast<size_t>(seq)][static_cast<size_t>(j / kBlock)] * kBlock + j % kBlock;
        cache->read(0, slot, kr.data(), vr.data());
        double dot = 0;
        for (int64_t i = 0; i < hd; ++i) dot += double{q[static_cast<size_t>(t * qd + h * hd + i)]} * kr[static_cast<size_t>(kvh * hd + i)];
        dot *= a.scale;
        if (v.softcap > 0) dot = v.softcap * std::tanh(dot / v.softcap);
        s.push_back(dot);
        mx = std::max(mx, dot);
        vals.emplace_back(vr.begin() + kvh * hd, vr.begin() + (kvh + 1) * hd);
      }
      double sum = v.sinks ? std::exp(sinks[static_cast<size_t>(h)] - mx) : 0.0;
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (size_t j = 0; j < s.size(); ++j) {
        for (int64_t i = 0; i < hd; ++i) o[static_cast<size_t>(i)] += s[j] / sum * vals[j][static_cast<size_t>(i)];
      }
      for (int64_t i = 0; i < hd; ++i) {
        double want = o[static_cast<size_t>(i)];
        if (v.gate) want *= 1.0 / (1.0 + std::exp(-double{gate[static_cast<size_t>(t * 2 * qd + (2 * h + 1) * hd + i)]}));
        const float got = out[static_cast<size_t>(t * qd + h * hd + i)];
        ASSERT_FALSE(std::isnan(got)) << "token " << t << " head " << h << " dim " << i << " not written";
        worst = std::max(worst, std::fabs(got - want));
        biggest = std::max(biggest, std::fabs(want));
      }
    }
  }
  EXPECT_LT(worst, 2e-5 * std::max(1.0, biggest)) << v.name;
  EXPECT_GT(biggest, 0.1);

  // Token 3 (sequence 1) alone gives the bits it had among the four.
  model::Batch one;
  one.add_seq(tables[1], lengths[1]);
  one.add_token(1, 8, 0, true, kBlock);
  std::vector<float> alone(static_cast<size_t>(qd));
  AttentionArgs a1 = a;
  a1.step = StepView{1, one.positions.data(), one.seq_index.data(), one.block_offsets.data()};
  a1.block_ids = one.block_ids.data();
  a1.q = q.data() + 3 * qd;
  a1.out = alone.data();
  a1.q_gate = v.gate ? gate.data() + 3 * 2 * qd : nullptr;
  run_attention(a1);
  EXPECT_EQ(0, std::memcmp(alone.data(), out.data() + 3 * qd, static_cast<size_t>(qd) * sizeof(float)));
}

INSTANTIATE_TEST_SUITE_P(
    Variants, CudaAttentionWarp,
    ::testing::Values(Variant{kv::KvType::kF32, 64, 0, false, 0.0f, false, "f32"},
                      Variant{kv::KvType::kF16, 64, 0, false, 0.0f, false, "f16"},
                      Variant{kv::KvType::kBF16, 64, 0, false, 0.0f, false, "bf16"},
                      Variant{kv::KvType::kQ8_0, 64, 0, false, 0.0f, false, "q8_0"},
                      Variant{kv::KvType::kF16, 80, 0, false, 0.0f, false, "f16_hd80"},
                      Variant{kv::KvType::kF16, 64, 5, false, 0.0f, false, "window"},
                      Variant{kv::KvType::kF16, 64, 0, true, 0.0f, false, "sinks"},
                      Variant{kv::KvType::kF16, 64, 0, false, 20.0f, true, "softcap_gate"},
                      Variant{kv::KvType::kF32, 256, 0, false, 0.0f, false, "hd256"}),
    [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace ridge::backend::cuda::testing
#endif
