#include "model/linear_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/delta_net.h"
#include "model/for_rows.h"
#include "model/ops.h"

namespace ridge::model {
namespace {

constexpr int64_t kConvChannelsPerItem = 256;  // conv work is split in channel blocks

// The row range of each sequence that has rows (validated contiguous by check_recurrent_batch).
void seq_rows(const Batch& batch, std::vector<SeqRows>& out) {
  out.clear();
  for (int64_t t = 0; t < batch.n_tokens(); ++t) {
    const int32_t s = batch.seq_index[static_cast<size_t>(t)];
    if (out.empty() || out.back().seq != s) out.push_back({s, t, t});
    out.back().end = t + 1;
  }
}

// fn(item) for items [0, n), over the pool when `work` (elements touched) pays for waking it.
template <typename Fn>
void for_items(ThreadPool& pool, int64_t n, int64_t work, const Fn& fn) {
  if (pool.size() == 1 || n < 2 || work < kParallelElems) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  pool.run([&](int ith, int nth) {
    const Range r = split_range(n, ith, nth);
    for (int64_t i = r.begin; i < r.end; ++i) fn(i);
  });
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }

// x / max(||x||, eps), the sum of squares in double (as ggml's l2_norm).
void l2_normalize(const float* x, float* y, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float scale = 1.0f / std::max(std::sqrt(static_cast<float>(sum)), eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
}

}  // namespace

Status check_recurrent_batch(const Batch& batch, const kv::RecurrentState& states) {
  if (states.n_slots() == 0) return error("forward: this model keeps recurrent state, the cache has none");
  if (batch.state_slots.size() != batch.context_lens.size()) {
    return error("forward: {} recurrent-state slots for {} sequences", batch.state_slots.size(),
                 batch.context_lens.size());
  }
  std::vector<uint8_t> seen(batch.context_lens.size(), 0), slot_used(static_cast<size_t>(states.n_slots()), 0);
  for (int64_t t = 0; t < batch.n_tokens(); ++t) {
    const auto s = static_cast<size_t>(batch.seq_index[static_cast<size_t>(t)]);
    const int32_t pos = batch.positions[static_cast<size_t>(t)];
    const bool continues = t > 0 && batch.seq_index[static_cast<size_t>(t - 1)] == batch.seq_index[static_cast<size_t>(t)];
    if (continues) {
      if (pos != batch.positions[static_cast<size_t>(t - 1)] + 1) {
        return error("forward: row {} (position {}) does not follow its sequence's previous row", t, pos);
      }
      continue;
    }
    if (seen[s]) return error("forward: sequence {}'s rows are not together (row {})", s, t);
    seen[s] = 1;
    const int32_t slot = batch.state_slots[s];
    if (slot < 0 || slot >= states.n_slots()) {
      return error("forward: sequence {} has recurrent-state slot {} of {}", s, slot, states.n_slots());
    }
    if (slot_used[static_cast<size_t>(slot)]) return error("forward: recurrent-state slot {} used twice", slot);
    slot_used[static_cast<size_t>(slot)] = 1;
    if (pos != 0 && pos != states.positions(slot)) {
      return error("forward: sequence {} starts at position {} but its recurrent state holds {} "
                   "positions (a state cannot be rolled back: start again at 0)", s, pos,
                   states.positions(slot));
    }
  }
  return ok_status();
}

void begin_recurrent_step(const Batch& batch, kv::RecurrentState& states, Workspace& ws) {
  seq_rows(batch, ws.lin.rows);
  for (int64_t t = 0; t < batch.n_tokens(); ++t) {
    if (batch.positions[static_cast<size_t>(t)] != 0) continue;
    states.reset(batch.state_slots[static_cast<size_t>(batch.seq_index[static_cast<size_t>(t)])]);
  }
}

void end_recurrent_step(const Batch& batch, kv::RecurrentState& states) {
  for (int64_t t = 0; t < batch.n_tokens(); ++t) {
    const int32_t slot = batch.state_slots[static_cast<size_t>(batch.seq_index[static_cast<size_t>(t)])];
    states.set_positions(slot, batch.positions[static_cast<size_t>(t)] + 1);
  }
}

void gated_delta_net(const ModelConfig& cfg, const LayerWeights& l, int64_t il,
                     const kernels::Kernels& kernels, const Batch& batch,
                     kv::RecurrentState& states, Workspace& ws, ThreadPool& pool) {
  LinearWorkspace& lw = ws.lin;
  const int64_t n = batch.n_tokens(), d = cfg.n_embd;
  const int64_t hk = cfg.ssm_n_k_heads, hv = cfg.ssm_n_v_heads, hd = cfg.ssm_head_dim;
  const int64_t key_dim = cfg.ssm_key_dim(), value_dim = cfg.ssm_value_dim();
  const int64_t conv_dim = cfg.ssm_conv_dim(), K = cfg.ssm_conv_kernel;
  const int64_t layer = cfg.recurrent_layer(il);
  // In-projections: q | k | v before the conv, the output gate z, beta's and the decay's inputs.
  const kernels::MatmulTarget proj[] = {{&l.ssm_qkv, lw.mixed.data(), conv_dim},
                                        {&l.ssm_z, lw.z.data(), value_dim},
                                        {&l.ssm_beta, lw.beta.data(), hv},
                                        {&l.ssm_alpha, lw.g.data(), hv}};
  kernels.matmul_group(std::span(proj), ws.xn.data(), d, n, pool, nullptr);
  const auto n_seqs = static_cast<int64_t>(lw.rows.size());
  auto state_of = [&](int64_t i) {
    return states.data(layer, batch.state_slots[static_cast<size_t>(lw.rows[static_cast<size_t>(i)].seq)]);
  };
  // The causal conv (in place) with each sequence's conv state, in channel blocks; silu below.
  const int64_t blocks = (conv_dim + kConvChannelsPerItem - 1) / kConvChannelsPerItem;
  for_items(pool, n_seqs * blocks, n * conv_dim * K, [&](int64_t item) {
    const SeqRows& r = lw.rows[static_cast<size_t>(item / blocks)];
    const int64_t c0 = item % blocks * kConvChannelsPerItem;
    float* x = lw.mixed.data() + r.begin * conv_dim;
    causal_conv1d(x, r.end - r.begin, conv_dim, l.ssm_conv.data, K, state_of(item / blocks), x,
                       IndexRange{c0, std::min(conv_dim, c0 + kConvChannelsPerItem)});
  });
  // silu; q and k L2-normalized per head, v apart; beta = sigmoid(b), g = softplus(a + dt_bias) A.
  const SiluFn silu_row = silu_for(kernels.isa);
  for_rows(pool, n, conv_dim, [&](int64_t t) {
    float* c = lw.mixed.data() + t * conv_dim;
    silu_row(c, conv_dim);
    for (int64_t h = 0; h < hk; ++h) {
      l2_normalize(c + h * hd, lw.q.data() + t * key_dim + h * hd, hd, cfg.rms_eps);
      l2_normalize(c + key_dim + h * hd, lw.k.data() + t * key_dim + h * hd, hd, cfg.rms_eps);
    }
    std::copy(c + 2 * key_dim, c + conv_dim, lw.v.data() + t * value_dim);
    for (int64_t j = 0; j < hv; ++j) {
      float& b = lw.beta[static_cast<size_t>(t * hv + j)];
      float& g = lw.g[static_cast<size_t>(t * hv + j)];
      b = sigmoid(b);
      g = softplus(g + l.ssm_dt_bias.data[j]) * l.ssm_a.data[j];
    }
  });
  // The gated delta rule, per sequence and value head, into attn [n, Dv].
  const DeltaNetShape shape{hk, hv, hd, hd};
  const float out_scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t conv_floats = cfg.ssm_conv_state_floats();
  const DeltaRuleFn delta_rule = delta_rule_for(kernels.isa);
  for_items(pool, n_seqs * hv, n * hv * hd * hd, [&](int64_t item) {
    const SeqRows& r = lw.rows[static_cast<size_t>(item / hv)];
    const int64_t j = item % hv;
    delta_rule(shape, r.end - r.begin, lw.q.data() + r.begin * key_dim,
                          lw.k.data() + r.begin * key_dim, lw.v.data() + r.begin * value_dim,
                          lw.g.data() + r.begin * hv, lw.beta.data() + r.begin * hv,
                          state_of(item / hv) + conv_floats, ws.attn.data() + r.begin * value_dim,
                          out_scale, IndexRange{j, j + 1});
  });
  // o = RMSNorm(o; ssm_norm) * silu(z), per head.
  const SwigluFn gate = swiglu_for(kernels.isa);
  for_rows(pool, n, 2 * value_dim, [&](int64_t t) {
    float* o = ws.attn.data() + t * value_dim;
    for (int64_t j = 0; j < hv; ++j) rms_norm(o + j * hd, l.ssm_norm.data, o + j * hd, hd, cfg.rms_eps);
    gate(lw.z.data() + t * value_dim, o, o, value_dim);
  });
}

}  // namespace ridge::model
