// attention_input then attention on every registered backend (and the CPU backend on each ISA),
// on an f32 and an f16 KV cache: two sequences in paged blocks, GQA (8 query heads on 2 KV
// heads), a prefill step and a continuation step, against double-precision references written
// here: the q/k/v preparation (biases, per-head q/k RMSNorm, rope, the gated layer's q) against
// the cache's contents, and a plain softmax attention over the dequantized cache (window, sinks,
// score soft-capping, the output gate). The ops take their activations and the cache in the
// backend's memory and their weights given to its load_weights (op_fixture.h).
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "model/attention.h"
#include "model/config.h"
#include "op_fixture.h"

namespace ridge::backend::testing {
namespace {

class BackendAttention : public BackendOpTest {};

constexpr int64_t kNHead = 8, kNHeadKv = 2, kHd = 32, kBlock = 16, kLayer = 1;
constexpr int64_t kQd = kNHead * kHd, kKvd = kNHeadKv * kHd;

struct AttnVariant {
  const char* name;
  bool biases = false, qk_norm = false, gated = false;
  model::RopeLayout layout = model::RopeLayout::kNeox;
  int64_t rope_dims = kHd;
  int64_t window = 0;
  bool sinks = false;
  float softcap = 0.0f;
};

const AttnVariant kVariants[] = {
    {"plain"},
    {"qwen_window_sinks", true, true, false, model::RopeLayout::kNeox, kHd, 10, true},
    {"gated_partial_rope_softcap", false, true, true, model::RopeLayout::kNormal, 16, 0, false,
     1.5f},
};

// The layer's inputs for the rows of a batch: the q/k/v matmul outputs and rope tables.
struct StepInputs {
  std::vector<float> q, q_gate, k, v, cos, sin;
};

StepInputs make_inputs(const model::Batch& b, const AttnVariant& var, uint32_t seed) {
  const auto n = static_cast<size_t>(b.n_tokens());
  StepInputs in;
  in.q = randn(n * kQd, seed);
  if (var.gated) in.q_gate = randn(n * 2 * kQd, seed + 1);
  in.k = randn(n * kKvd, seed + 2);
  in.v = randn(n * kKvd, seed + 3);
  const int64_t half = var.rope_dims / 2;
  for (size_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double a = b.positions[t] * std::pow(10000.0, -2.0 * static_cast<double>(i) /
                                                              static_cast<double>(var.rope_dims));
      in.cos.push_back(static_cast<float>(std::cos(a)));
      in.sin.push_back(static_cast<float>(std::sin(a)));
    }
  }
  return in;
}

// Rotary embedding of n_heads vectors in double, with the tables given.
void ref_rope(double* x, int64_t n_heads, const float* cs, const float* sn,
              const AttnVariant& var) {
  const int64_t half = var.rope_dims / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    double* v = x + h * kHd;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t i0 = var.layout == model::RopeLayout::kNormal ? 2 * i : i;
      const int64_t i1 = var.layout == model::RopeLayout::kNormal ? 2 * i + 1 : i + half;
      const double a = v[i0], c = v[i1];
      v[i0] = a * cs[i] - c * sn[i];
      v[i1] = a * sn[i] + c * cs[i];
    }
  }
}

struct LayerParams {
  std::vector<float> bq = randn(kQd, 101, 0.5f), bk = randn(kKvd, 102, 0.5f),
                     bv = randn(kKvd, 103, 0.5f);
  std::vector<float> q_norm = randn(kHd, 104, 0.2f, 1.0f), k_norm = randn(kHd, 105, 0.2f, 1.0f);
  std::vector<float> sinks = randn(kNHead, 106, 1.5f);
};

// Plain attention in double over the cache's dequantized rows (KvCache::read), q as the backend
// left it after attention_input; no_window_or_sinks: the same without them (to see they act).
std::vector<double> ref_attention(const model::Batch& b, const kv::KvCache& kv, const float* q,
                                  const StepInputs& in, const AttnVariant& var,
                                  const LayerParams& lp, bool no_window_or_sinks = false) {
  const int64_t group = kNHead / kNHeadKv;
  const double scale = 1.0 / std::sqrt(static_cast<double>(kHd));
  std::vector<double> out(static_cast<size_t>(b.n_tokens() * kQd), 0.0);
  std::vector<float> k(kKvd), v(kKvd);
  const int64_t window = no_window_or_sinks ? 0 : var.window;
  const bool sinks = var.sinks && !no_window_or_sinks;
  for (int64_t t = 0; t < b.n_tokens(); ++t) {
    const auto table = b.block_table(b.seq_index[static_cast<size_t>(t)]);
    const int64_t n = b.positions[static_cast<size_t>(t)] + 1;
    const int64_t first = window > 0 ? std::max<int64_t>(0, n - window) : 0;
    std::vector<std::vector<float>> ks, vs;
    for (int64_t p = 0; p < n; ++p) {
      kv.read(kLayer, int64_t{table[static_cast<size_t>(p / kBlock)]} * kBlock + p % kBlock,
              k.data(), v.data());
      ks.push_back(k);
      vs.push_back(v);
    }
    for (int64_t h = 0; h < kNHead; ++h) {
      const float* qh = q + t * kQd + h * kHd;
      const int64_t g = h / group;
      std::vector<double> s(static_cast<size_t>(n), 0.0);
      double mx = sinks ? lp.sinks[static_cast<size_t>(h)] : -1e300, sum = 0;
      for (int64_t p = first; p < n; ++p) {
        double d = 0;
        for (int64_t i = 0; i < kHd; ++i)
          d += double{qh[i]} * ks[static_cast<size_t>(p)][static_cast<size_t>(g * kHd + i)];
        d *= scale;
        if (var.softcap > 0) d = var.softcap * std::tanh(d / var.softcap);
        s[static_cast<size_t>(p)] = d;
        mx = std::max(mx, d);
      }
      for (int64_t p = first; p < n; ++p)
        sum += (s[static_cast<size_t>(p)] = std::exp(s[static_cast<size_t>(p)] - mx));
      if (sinks) sum += std::exp(lp.sinks[static_cast<size_t>(h)] - mx);
      double* o = out.data() + t * kQd + h * kHd;
      for (int64_t p = first; p < n; ++p) {
        for (int64_t i = 0; i < kHd; ++i)
          o[i] += s[static_cast<size_t>(p)] / sum *
                  vs[static_cast<size_t>(p)][static_cast<size_t>(g * kHd + i)];
      }
      for (int64_t i = 0; var.gated && i < kHd; ++i) {
        o[i] /=
            1 +
            std::exp(-double{in.q_gate[static_cast<size_t>(t * 2 * kQd + (2 * h + 1) * kHd + i)]});
      }
    }
  }
  return out;
}

// One step of the layer on `be`: attention_input then attention; checks q, the cache's new rows
// and the output against the references. kv_tol: the cache type's rounding, relative.
void run_and_check(model::Backend& be, kv::KvCache& kv, const model::Batch& b,
                   const AttnVariant& var, const LayerParams& lp, double kv_tol, uint32_t seed) {
  const auto n = static_cast<size_t>(b.n_tokens());
  StepInputs in = make_inputs(b, var, seed);
  const StepInputs orig = in;
  std::vector<float> out(n * kQd, -7.0f);
  DeviceMirror dev(be);
  model::AttentionInputOp op;
  op.q = dev(in.q);
  op.k = dev(in.k);
  op.v = dev(in.v);
  op.q_gate = var.gated ? dev(in.q_gate) : nullptr;
  op.bq = var.biases ? lp.bq.data() : nullptr;
  op.bk = var.biases ? lp.bk.data() : nullptr;
  op.bv = var.biases ? lp.bv.data() : nullptr;
  op.q_norm = var.qk_norm ? lp.q_norm.data() : nullptr;
  op.k_norm = var.qk_norm ? lp.k_norm.data() : nullptr;
  op.n_head = kNHead;
  op.n_head_kv = kNHeadKv;
  op.head_dim = kHd;
  op.eps = 1e-6f;
  op.rope_dims = var.rope_dims;
  op.rope_layout = var.layout;
  op.cos = dev(in.cos);
  op.sin = dev(in.sin);
  op.cache = &kv;
  op.kv_layer = kLayer;
  model::AttentionOp a;
  a.q = op.q;
  a.out = dev(out);
  a.cache = &kv;
  a.layer = kLayer;
  a.n_head = kNHead;
  a.n_head_kv = kNHeadKv;
  a.head_dim = kHd;
  a.scale = 1.0f / std::sqrt(static_cast<float>(kHd));
  a.window = var.window;
  a.sinks = var.sinks ? lp.sinks.data() : nullptr;
  a.softcap = var.softcap;
  {
    StepScope step(be, b);
    be.attention_input(op);
    be.attention(a, op.q_gate);
  }
  dev.sync();
  // The inputs as attention_input defines them, in double: q (each head's part of q_gate), k, v
  // with biases, per-head RMSNorm of q and k, rope.
  const int64_t half = var.rope_dims / 2;
  double q_err = 0, kv_err = 0;
  std::vector<float> kc(kKvd), vc(kKvd);
  for (size_t t = 0; t < n; ++t) {
    std::vector<double> q(kQd), k(kKvd), v(kKvd), qn(kQd), kn(kKvd);
    for (int64_t i = 0; i < kQd; ++i) {
      const size_t src = var.gated ? t * 2 * kQd + static_cast<size_t>(i / kHd * 2 * kHd + i % kHd)
                                   : t * kQd + static_cast<size_t>(i);
      q[static_cast<size_t>(i)] = (var.gated ? orig.q_gate : orig.q)[src] +
                                  (var.biases ? lp.bq[static_cast<size_t>(i)] : 0.0f);
    }
    for (int64_t i = 0; i < kKvd; ++i) {
      k[static_cast<size_t>(i)] = double{orig.k[t * kKvd + static_cast<size_t>(i)]} +
                                  (var.biases ? lp.bk[static_cast<size_t>(i)] : 0.0f);
      v[static_cast<size_t>(i)] = double{orig.v[t * kKvd + static_cast<size_t>(i)]} +
                                  (var.biases ? lp.bv[static_cast<size_t>(i)] : 0.0f);
    }
    for (int64_t h = 0; var.qk_norm && h < kNHead; ++h)
      ref_rms_norm(&q[static_cast<size_t>(h * kHd)], lp.q_norm.data(),
                   &q[static_cast<size_t>(h * kHd)], kHd, 1e-6);
    for (int64_t h = 0; var.qk_norm && h < kNHeadKv; ++h)
      ref_rms_norm(&k[static_cast<size_t>(h * kHd)], lp.k_norm.data(),
                   &k[static_cast<size_t>(h * kHd)], kHd, 1e-6);
    ref_rope(q.data(), kNHead, orig.cos.data() + t * half, orig.sin.data() + t * half, var);
    ref_rope(k.data(), kNHeadKv, orig.cos.data() + t * half, orig.sin.data() + t * half, var);
    q_err = std::max(q_err, max_abs_diff(in.q.data() + t * kQd, q.data(), kQd));
    kv.read(kLayer, b.slots[t], kc.data(), vc.data());
    for (int64_t i = 0; i < kKvd; ++i) {
      const auto u = static_cast<size_t>(i);
      kv_err = std::max({kv_err, std::fabs(kc[u] - k[u]) / (kv_tol * std::fabs(k[u]) + 1e-5),
                         std::fabs(vc[u] - v[u]) / (kv_tol * std::fabs(v[u]) + 1e-5)});
    }
  }
  EXPECT_LT(q_err, 5e-6) << "q after attention_input";
  EXPECT_LT(kv_err, 1.0) << "the cache's new K/V rows (error over tolerance)";
  note_error(std::string("attention_input_q_abs_err_") + var.name, q_err);

  const std::vector<double> ref = ref_attention(b, kv, in.q.data(), orig, var, lp);
  const double err = max_abs_diff(out.data(), ref.data(), ref.size());
  note_error(std::string("attention_abs_err_") + var.name, err);
  EXPECT_LT(err, 5e-6) << "vs double attention over the dequantized cache";
  EXPECT_GT(max_abs(out), 0.1) << "outputs all (near) zero";
  if (var.window > 0 || var.sinks) {
    const std::vector<double> plain = ref_attention(b, kv, in.q.data(), orig, var, lp, true);
    EXPECT_GT(max_abs_diff(out.data(), plain.data(), plain.size()), 1e-2)
        << "the window and sinks must act";
  }
}

// Sequence 0 in blocks {5, 2, 9, 0}, sequence 1 in {7, 3, 11}: a prefill step (positions 0..29
// and 0..34, both sequences in one batch), then a step continuing both (30..40, and 35).
void check_attention(model::Backend& be, const char* kv_type, double kv_tol) {
  const LayerParams lp;
  ASSERT_TRUE(load_test_weights(
      be, {weight_region("bq", lp.bq), weight_region("bk", lp.bk), weight_region("bv", lp.bv),
           weight_region("q_norm", lp.q_norm), weight_region("k_norm", lp.k_norm),
           weight_region("sinks", lp.sinks)}));
  for (const AttnVariant& var : kVariants) {
    SCOPED_TRACE(std::string(kv_type) + " cache, " + var.name);
    kv::KvCacheConfig c;
    c.n_layer = 2;
    c.n_head_kv = kNHeadKv;
    c.head_dim = kHd;
    c.block_size = kBlock;
    c.n_blocks = 12;
    const auto type = kv::kv_type_from_name(kv_type);
    ASSERT_TRUE(type.ok());
    c.type = *type;
    auto kv = kv::KvCache::create(c, be.memory());
    ASSERT_TRUE(kv.ok()) << kv.status().message();
    const std::vector<int32_t> t0 = {5, 2, 9, 0}, t1 = {7, 3, 11};
    model::Batch prefill;
    prefill.add_seq(t0, 30);
    prefill.add_seq(t1, 35);
    for (int32_t p = 0; p < 30; ++p) prefill.add_token(1, p, 0, false, kBlock);
    for (int32_t p = 0; p < 35; ++p) prefill.add_token(2, p, 1, false, kBlock);
    run_and_check(be, *kv, prefill, var, lp, kv_tol, 200);
    model::Batch next;
    next.add_seq(t0, 41);
    next.add_seq(t1, 36);
    for (int32_t p = 30; p <= 40; ++p) next.add_token(3, p, 0, true, kBlock);
    next.add_token(4, 35, 1, true, kBlock);
    run_and_check(be, *kv, next, var, lp, kv_tol, 300);
  }
}

TEST_P(BackendAttention, F32Cache) { check_attention(be(), "f32", 1e-6); }
TEST_P(BackendAttention, F16Cache) { check_attention(be(), "f16", 1.0 / 1024); }

INSTANTIATE_TEST_SUITE_P(Backends, BackendAttention, ::testing::ValuesIn(op_params()),
                         op_param_name);

}  // namespace
}  // namespace ridge::backend::testing
