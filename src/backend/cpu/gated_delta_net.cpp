#include "backend/cpu/gated_delta_net.h"
#include "backend/cpu/isa_table.h"
#include "backend/cpu/model_names.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/delta_net.h"
#include "backend/cpu/for_rows.h"
#include "model/ops.h"

namespace ridge::backend::cpu {
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

// Copies the state columns [c0, c1) of the conv's rows, or head j's matrix, into a snapshot slot.
void copy_conv_columns(const float* from, float* to, int64_t rows, int64_t channels, int64_t c0, int64_t c1) {
  for (int64_t i = 0; i < rows; ++i) std::copy(from + i * channels + c0, from + i * channels + c1, to + i * channels + c0);
}

}  // namespace

void begin_recurrent_step(const Batch& batch, kv::RecurrentState& states, Workspace& ws) {
  seq_rows(batch, ws.lin.rows);
  ws.lin.snaps.clear();
  for (SeqRows& r : ws.lin.rows) {
    r.snap_begin = ws.lin.snaps.size();
    const int32_t first = batch.positions[static_cast<size_t>(r.begin)];
    for (const Batch::StateSnapshot& snap : batch.state_snapshots) {
      if (snap.seq == r.seq) ws.lin.snaps.push_back({r.begin + (snap.n_positions - first), snap.slot});
    }
    r.snap_end = ws.lin.snaps.size();
    std::sort(ws.lin.snaps.begin() + static_cast<std::ptrdiff_t>(r.snap_begin), ws.lin.snaps.end(),
              [](const RowSnapshot& a, const RowSnapshot& b) { return a.row < b.row; });
  }
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
  for (const Batch::StateSnapshot& snap : batch.state_snapshots) states.set_positions(snap.slot, snap.n_positions);
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
    const int64_t c0 = item % blocks * kConvChannelsPerItem, c1 = std::min(conv_dim, c0 + kConvChannelsPerItem);
    float* state = state_of(item / blocks);
    // The rows up to each snapshot, the snapshot's copy of these channels, then the rest.
    int64_t t0 = r.begin;
    for (size_t i = r.snap_begin; i <= r.snap_end; ++i) {
      const int64_t t1 = i < r.snap_end ? lw.snaps[i].row : r.end;
      float* x = lw.mixed.data() + t0 * conv_dim;
      causal_conv1d(x, t1 - t0, conv_dim, l.ssm_conv.data, K, state, x, IndexRange{c0, c1});
      if (i < r.snap_end) copy_conv_columns(state, states.data(layer, lw.snaps[i].slot), K - 1, conv_dim, c0, c1);
      t0 = t1;
    }
  });
  // silu; q and k L2-normalized per head, v apart; beta = sigmoid(b), g = softplus(a + dt_bias) A.
  const SiluFn silu_row = isa_table(kernels.isa).silu;
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
  const DeltaRuleFn delta_rule = isa_table(kernels.isa).delta_rule;
  for_items(pool, n_seqs * hv, n * hv * hd * hd, [&](int64_t item) {
    const SeqRows& r = lw.rows[static_cast<size_t>(item / hv)];
    const int64_t j = item % hv, head_floats = hd * hd;
    float* state = state_of(item / hv) + conv_floats;
    int64_t t0 = r.begin;
    for (size_t i = r.snap_begin; i <= r.snap_end; ++i) {
      const int64_t t1 = i < r.snap_end ? lw.snaps[i].row : r.end;
      delta_rule(shape, t1 - t0, lw.q.data() + t0 * key_dim, lw.k.data() + t0 * key_dim,
                 lw.v.data() + t0 * value_dim, lw.g.data() + t0 * hv, lw.beta.data() + t0 * hv,
                 state, ws.attn.data() + t0 * value_dim, out_scale, IndexRange{j, j + 1});
      if (i < r.snap_end) {
        const float* from = state + j * head_floats;
        std::copy(from, from + head_floats, states.data(layer, lw.snaps[i].slot) + conv_floats + j * head_floats);
      }
      t0 = t1;
    }
  });
  // o = RMSNorm(o; ssm_norm) * silu(z), per head.
  const SwigluFn gate = isa_table(kernels.isa).swiglu;
  for_rows(pool, n, 2 * value_dim, [&](int64_t t) {
    float* o = ws.attn.data() + t * value_dim;
    for (int64_t j = 0; j < hv; ++j) rms_norm(o + j * hd, l.ssm_norm.data, o + j * hd, hd, cfg.rms_eps);
    gate(lw.z.data() + t * value_dim, o, o, value_dim);
  });
}

}  // namespace ridge::backend::cpu
