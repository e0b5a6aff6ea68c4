// The CUDA row kernels' bodies (row_ops.h), run on the host by a block of threads in lockstep
// (host_block.h): RMSNorm (also in place), the residual join with each optional part, and the
// attention input (q out of a gated q, biases, per-head q/k norms, v from k and v's norm, both
// rope layouts, K/V written into a paged cache of every type) against double-precision
// references written here and the cache's own row decoding.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#if RIDGE_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/row_ops.h"
#include "host_block.h"
#include "kv/kv_cache.h"

namespace ridge::backend::cuda::testing {
namespace {

std::vector<float> randn(size_t n, uint32_t seed, float sd = 1.0f, float mean = 0.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(mean, sd);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

void ref_rms(const std::vector<double>& x, const float* w, std::vector<double>& y, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double s = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  y.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * (w != nullptr ? w[i] : 1.0f);
}

TEST(CudaRowOps, RmsNormAndResidual) {
  constexpr int64_t kD = 67;
  const std::vector<float> x0 = randn(kD, 1, 2.0f), w = randn(kD, 2, 0.2f, 1.0f);
  std::vector<float> y(kD), inplace = x0;
  for (int threads : {32, 64, 256}) {
    HostBlock::run(threads, [&](HostBlock& b) { rms_norm_row(x0.data(), w.data(), y.data(), kD, 1e-5f, b); });
    std::vector<double> want;
    ref_rms(std::vector<double>(x0.begin(), x0.end()), w.data(), want, 1e-5);
    for (int64_t i = 0; i < kD; ++i) EXPECT_NEAR(y[static_cast<size_t>(i)], want[static_cast<size_t>(i)], 2e-6 * 3) << i;
  }
  HostBlock::run(64, [&](HostBlock& b) { rms_norm_row(inplace.data(), w.data(), inplace.data(), kD, 1e-5f, b); });
  HostBlock::run(64, [&](HostBlock& b) { rms_norm_row(x0.data(), w.data(), y.data(), kD, 1e-5f, b); });
  EXPECT_EQ(inplace, y) << "in place";

  const std::vector<float> bias = randn(kD, 3), post = randn(kD, 4, 0.2f, 1.0f), next = randn(kD, 5, 0.2f, 1.0f);
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<float> proj = randn(kD, 6 + variant, 3.0f), x = randn(kD, 9 + variant), xn(kD, -7.0f);
    std::vector<double> p(proj.begin(), proj.end()), xd(x.begin(), x.end()), xnd;
    ResidualArgs a{1, kD, 1e-6f, proj.data(), variant >= 1 ? bias.data() : nullptr,
                   variant >= 2 ? post.data() : nullptr, x.data(), next.data(), xn.data()};
    HostBlock::run(64, [&](HostBlock& b) { residual_row(a, 0, b); });
    for (int64_t i = 0; variant >= 1 && i < kD; ++i) p[static_cast<size_t>(i)] += bias[static_cast<size_t>(i)];
    if (variant >= 2) ref_rms(std::vector<double>(p), post.data(), p, 1e-6);
    for (int64_t i = 0; i < kD; ++i) xd[static_cast<size_t>(i)] += p[static_cast<size_t>(i)];
    ref_rms(xd, next.data(), xnd, 1e-6);
    for (int64_t i = 0; i < kD; ++i) {
      EXPECT_NEAR(x[static_cast<size_t>(i)], xd[static_cast<size_t>(i)], 2e-5) << "variant " << variant << " x " << i;
      EXPECT_NEAR(xn[static_cast<size_t>(i)], xnd[static_cast<size_t>(i)], 2e-5) << "variant " << variant << " xn " << i;
    }
  }
}

struct InputCase {
  kv::KvType type;
  bool gated, neox, v_from_k;
  std::string name;
};

class CudaAttentionInput : public ::testing::TestWithParam<InputCase> {};

TEST_P(CudaAttentionInput, MatchesTheModelsDefinition) {
  const InputCase c = GetParam();
  constexpr int64_t kQHeads = 4, kKvHeadsIn = 2, kHd = 64, kRope = 48, kTokens = 3;
  constexpr int64_t qd = kQHeads * kHd, kvd = kKvHeadsIn * kHd;
  kv::KvCacheConfig cfg;
  cfg.n_layer = 1;
  cfg.n_head_kv = kKvHeadsIn;
  cfg.head_dim = kHd;
  cfg.block_size = 16;
  cfg.n_blocks = 4;
  cfg.type = c.type;
  auto cache = kv::KvCache::create(cfg);
  ASSERT_TRUE(cache.ok());
  const std::vector<float> q_gate = randn(kTokens * 2 * qd, 11), bq = randn(qd, 12, 0.3f), bk = randn(kvd, 13, 0.3f),
                           bv = randn(kvd, 14, 0.3f), qn = randn(kHd, 15, 0.2f, 1.0f), kn = randn(kHd, 16, 0.2f, 1.0f);
  std::vector<float> q = randn(kTokens * qd, 17), k = randn(kTokens * kvd, 18), v = randn(kTokens * kvd, 19);
  const std::vector<float> q0 = q, k0 = k, v0 = v;
  std::vector<float> cs(kTokens * kRope / 2), sn(cs.size());
  for (size_t i = 0; i < cs.size(); ++i) {
    cs[i] = std::cos(0.37f * static_cast<float>(i));
    sn[i] = std::sin(0.37f * static_cast<float>(i));
  }
  const std::vector<int64_t> slots = {17, 3, 40};  // blocks 1, 0, 2
  AttentionInputArgs a;
  a.n_tokens = kTokens;
  a.q = q.data();
  a.k = k.data();
  a.v = v.data();
  a.q_gate = c.gated ? q_gate.data() : nullptr;
  a.bq = bq.data();
  a.bk = bk.data();
  a.bv = bv.data();
  a.q_norm = qn.data();
  a.k_norm = kn.data();
  a.v_from_k = c.v_from_k;
  a.v_norm = c.v_from_k;
  a.n_head = kQHeads;
  a.n_head_kv = kKvHeadsIn;
  a.head_dim = kHd;
  a.eps = 1e-6f;
  a.rope_dims = kRope;
  a.neox = c.neox;
  a.cos = cs.data();
  a.sin = sn.data();
  a.slots = slots.data();
  a.kv = kv_layer_of(*cache, 0);
  for (int64_t t = 0; t < kTokens; ++t) {
    HostBlock::run(64, [&](HostBlock& b) { attention_input_row(a, t, b); });
  }

  // The reference, in double: the model's order of steps (backend.h AttentionInputOp).
  auto rope = [&](std::vector<double>& x, int64_t n_heads, int64_t t) {
    for (int64_t h = 0; h < n_heads; ++h) {
      for (int64_t i = 0; i < kRope / 2; ++i) {
        const int64_t ia = c.neox ? i : 2 * i, ib = c.neox ? i + kRope / 2 : 2 * i + 1;
        const double xa = x[static_cast<size_t>(h * kHd + ia)], xb = x[static_cast<size_t>(h * kHd + ib)];
        const double co = cs[static_cast<size_t>(t * kRope / 2 + i)], si = sn[static_cast<size_t>(t * kRope / 2 + i)];
        x[static_cast<size_t>(h * kHd + ia)] = xa * co - xb * si;
        x[static_cast<size_t>(h * kHd + ib)] = xa * si + xb * co;
      }
    }
  };
  auto norm_heads_ref = [&](std::vector<double>& x, int64_t n_heads, const float* w) {
    for (int64_t h = 0; h < n_heads; ++h) {
      std::vector<double> head(x.begin() + h * kHd, x.begin() + (h + 1) * kHd), out;
      ref_rms(head, w, out, 1e-6);
      std::copy(out.begin(), out.end(), x.begin() + h * kHd);
    }
  };
  std::vector<float> kr(kvd), vr(kvd);
  for (int64_t t = 0; t < kTokens; ++t) {
    std::vector<double> qw(qd), kw(k0.begin() + t * kvd, k0.begin() + (t + 1) * kvd), vw(v0.begin() + t * kvd, v0.begin() + (t + 1) * kvd);
    for (int64_t i = 0; i < qd; ++i) {
      qw[static_cast<size_t>(i)] = c.gated ? q_gate[static_cast<size_t>(t * 2 * qd + (i / kHd) * 2 * kHd + i % kHd)]
                                           : q0[static_cast<size_t>(t * qd + i)];
      qw[static_cast<size_t>(i)] += bq[static_cast<size_t>(i)];
    }
    if (c.v_from_k) vw = kw;
    for (int64_t i = 0; i < kvd; ++i) {
      kw[static_cast<size_t>(i)] += bk[static_cast<size_t>(i)];
      vw[static_cast<size_t>(i)] += bv[static_cast<size_t>(i)];
    }
    norm_heads_ref(qw, kQHeads, qn.data());
    norm_heads_ref(kw, kKvHeadsIn, kn.data());
    if (c.v_from_k) norm_heads_ref(vw, kKvHeadsIn, nullptr);
    rope(qw, kQHeads, t);
    rope(kw, kKvHeadsIn, t);
    for (int64_t i = 0; i < qd; ++i) EXPECT_NEAR(q[static_cast<size_t>(t * qd + i)], qw[static_cast<size_t>(i)], 1e-5) << "q " << t << " " << i;
    cache->read(0, slots[static_cast<size_t>(t)], kr.data(), vr.data());
    for (int64_t i = 0; i < kvd; ++i) {
      const double kwi = kw[static_cast<size_t>(i)], vwi = vw[static_cast<size_t>(i)];
      // The stored type's rounding: relative for the floats, a q8_0 step (amax / 127 of its block).
      const double tol = c.type == kv::KvType::kF32 ? 1e-5 : c.type == kv::KvType::kF16 ? 2e-3 * std::fabs(kwi) + 1e-5
                       : c.type == kv::KvType::kBF16 ? 8e-3 * std::fabs(kwi) + 1e-5 : 0.1;
      EXPECT_NEAR(kr[static_cast<size_t>(i)], kwi, tol) << "k " << t << " " << i;
      const double vtol = c.type == kv::KvType::kF32 ? 1e-5 : c.type == kv::KvType::kF16 ? 2e-3 * std::fabs(vwi) + 1e-5
                        : c.type == kv::KvType::kBF16 ? 8e-3 * std::fabs(vwi) + 1e-5 : 0.1;
      EXPECT_NEAR(vr[static_cast<size_t>(i)], vwi, vtol) << "v " << t << " " << i;
    }
  }
  // q8_0: the stored bytes are kv_store_row's for the same floats (its rounding, bit for bit).
  if (c.type == kv::KvType::kQ8_0) {
    std::vector<uint8_t> want(static_cast<size_t>(kv::kv_row_bytes(c.type, kHd)));
    for (int64_t t = 0; t < kTokens; ++t) {
      const uint8_t* got = static_cast<const uint8_t*>(cache->k_block(0, slots[static_cast<size_t>(t)] / 16, 0)) +
                           (slots[static_cast<size_t>(t)] % 16) * want.size();
      kv::kv_store_row(c.type, k.data() + t * kvd, want.data(), kHd);
      EXPECT_EQ(0, std::memcmp(got, want.data(), want.size())) << "token " << t << " head 0's K row";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, CudaAttentionInput,
                         ::testing::Values(InputCase{kv::KvType::kF32, false, false, false, "f32"},
                                           InputCase{kv::KvType::kF16, true, true, false, "f16_gated_neox"},
                                           InputCase{kv::KvType::kBF16, false, true, true, "bf16_v_from_k"},
                                           InputCase{kv::KvType::kQ8_0, true, false, false, "q8_0_gated"}),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace ridge::backend::cuda::testing
#endif
