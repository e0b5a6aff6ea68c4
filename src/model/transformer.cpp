// The forward pass shared by every architecture (what differs is bound in arch/*.cpp: optional
// biases and Q/K norms are applied when present; a mixture-of-experts FFN is model/moe.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/weight_layout.h"
#include "model/attention.h"
#include "model/ffn.h"
#include "model/for_rows.h"
#include "model/linear_attention.h"
#include "model/model.h"
#include "model/moe.h"
#include "model/ops.h"

namespace ridge::model {
namespace {

void matmul(const kernels::Kernels& k, const kernels::WeightView& w, const float* x, int64_t m,
            float* y, ThreadPool& pool) {
  k.matmul(w, x, w.cols, m, y, w.rows, pool);
}

}  // namespace

Status Model::check_step(const Batch& batch, const kv::KvCache& kv, const Workspace& ws,
                         const ThreadPool& pool) const {
  const kv::KvCacheConfig& kc = kv.config();
  if (kc.n_layer != cfg_.n_kv_layers() || kc.n_head_kv != cfg_.n_head_kv || kc.head_dim != cfg_.head_dim) {
    return error("forward: KV cache shape (layers {}, kv heads {}, head dim {}) does not match the "
                 "model ({}, {}, {})", kc.n_layer, kc.n_head_kv, kc.head_dim, cfg_.n_kv_layers(),
                 cfg_.n_head_kv, cfg_.head_dim);
  }
  if (cfg_.n_recurrent_layers() > 0) {
    const kv::RecurrentStateConfig& sc = kv.states().config();
    if (sc.n_layer != cfg_.n_recurrent_layers() || sc.floats_per_layer != cfg_.ssm_state_floats()) {
      return error("forward: the cache's recurrent state ({} layers of {} floats) does not match "
                   "the model ({} of {})", sc.n_layer, sc.floats_per_layer,
                   cfg_.n_recurrent_layers(), cfg_.ssm_state_floats());
    }
    RIDGE_RETURN_IF_ERROR(check_recurrent_batch(batch, kv.states()));
  }
  const WorkspaceLimits& lim = ws.limits();
  if (batch.n_tokens() > lim.max_tokens) {
    return error("forward: {} tokens in one step, the workspace holds {}", batch.n_tokens(),
                 lim.max_tokens);
  }
  if (lim.hidden_outputs && !batch.output_hidden && batch.n_outputs() > 0) {
    return error("forward: this workspace returns hidden states only (an embedding runner)");
  }
  if (batch.n_outputs() > lim.max_outputs) {
    return error("forward: {} rows need logits, the workspace holds {}", batch.n_outputs(),
                 lim.max_outputs);
  }
  if (pool.size() > lim.n_threads || kc.block_size != lim.block_size) {
    return error("forward: workspace made for {} threads / block size {}, used with {} / {}",
                 lim.n_threads, lim.block_size, pool.size(), kc.block_size);
  }
  for (int32_t ctx : batch.context_lens) {
    if (ctx > lim.max_context) {
      return error("forward: context {} exceeds the workspace's {}", ctx, lim.max_context);
    }
  }
  return batch.validate(cfg_.n_vocab, kv.n_blocks(), kv.block_size());
}

void Model::embed(const Batch& batch, Workspace& ws, ThreadPool& pool) const {
  const int64_t d = cfg_.n_embd;
  const int64_t half = cfg_.rope_dims / 2;
  const kernels::WeightView& e = w_.token_embd;
  // Gemma: embeddings times sqrt(n_embd), in f32 as llama.cpp scales them.
  const float embd_scale = cfg_.scale_embeddings ? std::sqrt(static_cast<float>(d)) : 1.0f;
  const bool swa_table = cfg_.swa_rope_differs();
  for_rows(pool, batch.n_tokens(), d, [&](int64_t t) {
    const auto tok = static_cast<uint64_t>(batch.tokens[static_cast<size_t>(t)]);
    float* x = ws.x.data() + t * d;
    kernels::dequantize_weight_row(*kernels_, e, static_cast<int64_t>(tok), x);
    if (cfg_.scale_embeddings) {
      for (int64_t i = 0; i < d; ++i) x[i] *= embd_scale;
    }
    // Rope cosines/sines of this token, shared by all layers and heads (sliding-window layers
    // have a table of their own where their base or scale differs).
    const int64_t pos = batch.positions[static_cast<size_t>(t)];
    rope_cos_sin(cfg_, cfg_.rope_theta, cfg_.rope_freq_scale, rope_factors_.data(), yarn_, pos,
                 ws.rope_cos.data() + t * half, ws.rope_sin.data() + t * half);
    if (swa_table) {
      rope_cos_sin(cfg_, cfg_.swa_rope_theta(), cfg_.swa_rope_freq_scale(), rope_factors_.data(), yarn_,
                   pos, ws.rope_cos_swa.data() + t * half, ws.rope_sin_swa.data() + t * half);
    }
  });
}

void Model::attention_block(int64_t il, const Batch& batch, kv::KvCache& kv, Workspace& ws,
                            ThreadPool& pool) const {
  const LayerWeights& l = w_.layers[static_cast<size_t>(il)];
  const int64_t n = batch.n_tokens();
  const int64_t d = cfg_.n_embd, qd = cfg_.q_dim(), kvd = cfg_.kv_dim(), hd = cfg_.head_dim;
  const int64_t half = cfg_.rope_dims / 2;
  const int64_t kv_layer = cfg_.kv_layer(il);
  for_rows(pool, n, d, [&](int64_t t) {
    rms_norm(ws.x.data() + t * d, l.attn_norm.data, ws.xn.data() + t * d, d, cfg_.rms_eps);
  });
  if (cfg_.is_recurrent_layer(il)) {
    gated_delta_net(cfg_, l, il, *kernels_, batch, kv.states(), ws, pool);  // attn: [n, Dv]
    return;
  }
  // q: [n, q_dim], k and v: [n, kv_dim], in one parallel region over one quantized xn. A gated
  // layer's wq gives each head's q then its gate ([n, 2 q_dim]), split below.
  const bool gated = cfg_.attn_output_gate;
  const kernels::MatmulTarget qkv[] = {
      {&l.wq, gated ? ws.lin.q_gate.data() : ws.q.data(), gated ? 2 * qd : qd},
      {&l.wk, ws.k.data(), kvd}, {&l.wv, ws.v.data(), kvd}};
  kernels_->matmul_group(std::span(qkv), ws.xn.data(), d, n, pool, nullptr);
  // Sliding-window layers rotate with their own table where it differs (embed()).
  const bool own_table = !ws.rope_cos_swa.empty() && cfg_.is_swa_layer(il);
  const float* cos_table = (own_table ? ws.rope_cos_swa : ws.rope_cos).data();
  const float* sin_table = (own_table ? ws.rope_sin_swa : ws.rope_sin).data();
  for_rows(pool, n, qd + 2 * kvd, [&](int64_t t) {
    float* q = ws.q.data() + t * qd;   // [n_head, head_dim]
    float* k = ws.k.data() + t * kvd;  // [n_head_kv, head_dim]
    float* v = ws.v.data() + t * kvd;  // [n_head_kv, head_dim]
    if (gated) {
      const float* qg = ws.lin.q_gate.data() + t * 2 * qd;
      for (int64_t h = 0; h < cfg_.n_head; ++h) std::copy(qg + 2 * h * hd, qg + (2 * h + 1) * hd, q + h * hd);
    }
    if (l.bq) add_inplace(q, l.bq.data, qd);
    if (l.bk) add_inplace(k, l.bk.data, kvd);
    if (l.bv) add_inplace(v, l.bv.data, kvd);
    if (l.q_norm) {
      for (int64_t h = 0; h < cfg_.n_head; ++h) rms_norm(q + h * hd, l.q_norm.data, q + h * hd, hd, cfg_.rms_eps);
    }
    if (l.k_norm) {
      for (int64_t h = 0; h < cfg_.n_head_kv; ++h) rms_norm(k + h * hd, l.k_norm.data, k + h * hd, hd, cfg_.rms_eps);
    }
    const float* cs = cos_table + t * half;
    const float* sn = sin_table + t * half;
    rope(q, cfg_.n_head, hd, cfg_.rope_dims, cs, sn, cfg_.rope_layout);
    rope(k, cfg_.n_head_kv, hd, cfg_.rope_dims, cs, sn, cfg_.rope_layout);
    kv.write(kv_layer, batch.slots[static_cast<size_t>(t)], k, v);
  });
  AttentionArgs a;
  a.q = ws.q.data();
  a.out = ws.attn.data();
  a.batch = &batch;
  a.cache = &kv;
  a.kernels = kernels_;
  a.layer = kv_layer;
  a.n_head = cfg_.n_head;
  a.n_head_kv = cfg_.n_head_kv;
  a.head_dim = hd;
  a.scale = cfg_.attention_scale();
  a.window = cfg_.is_swa_layer(il) ? cfg_.n_swa : 0;
  a.sinks = l.attn_sinks ? l.attn_sinks.data : nullptr;
  a.softcap = cfg_.attn_softcap;
  a.scratch = ws.attn_scratch.data();
  a.scratch_per_thread = ws.attn_scratch_per_thread;
  paged_attention(a, pool);
  if (gated) {  // attn *= sigmoid(gate), head by head
    for_rows(pool, n, 2 * qd, [&](int64_t t) {
      float* o = ws.attn.data() + t * qd;
      const float* qg = ws.lin.q_gate.data() + t * 2 * qd;
      for (int64_t h = 0; h < cfg_.n_head; ++h) {
        for (int64_t i = 0; i < hd; ++i) o[h * hd + i] *= 1.0f / (1.0f + std::exp(-qg[(2 * h + 1) * hd + i]));
      }
    });
  }
}

// The attention output projection, the residual add, and the FFN, for the first m rows.
void Model::ffn_block(int64_t il, int64_t m, Workspace& ws, ThreadPool& pool) const {
  const LayerWeights& l = w_.layers[static_cast<size_t>(il)];
  const int64_t d = cfg_.n_embd;
  matmul(*kernels_, l.wo, ws.attn.data(), m, ws.proj.data(), pool);  // [m, n_embd]
  for_rows(pool, m, 2 * d, [&](int64_t t) {
    float* p = ws.proj.data() + t * d;
    if (l.bo) add_inplace(p, l.bo.data, d);
    if (l.attn_post_norm) rms_norm(p, l.attn_post_norm.data, p, d, cfg_.rms_eps);
    add_inplace(ws.x.data() + t * d, p, d);
    rms_norm(ws.x.data() + t * d, l.ffn_norm.data, ws.xn.data() + t * d, d, cfg_.rms_eps);
  });
  if (cfg_.is_moe()) {
    moe_ffn(cfg_, l, il, *kernels_, m, ws, ws.proj.data(), pool);  // [m, n_embd]
  } else {
    GatedFfn ffn{&l.w_gate, &l.w_up, &l.w_down};
    ffn.gelu = cfg_.ffn_gelu;
    gated_ffn(*kernels_, ffn, ws.xn.data(), d, m, ws.gate.data(), ws.up.data(), ws.proj.data(), d,
              pool);  // [m, n_embd]
  }
  for_rows(pool, m, d, [&](int64_t t) {
    float* p = ws.proj.data() + t * d;
    if (l.ffn_post_norm) rms_norm(p, l.ffn_post_norm.data, p, d, cfg_.rms_eps);
    add_inplace(ws.x.data() + t * d, p, d);
  });
}

// Moves the rows that need logits to the front of x and attn (in order; attn as the last layer
// left it); returns their count.
int64_t Model::gather_outputs(const Batch& batch, Workspace& ws) const {
  const int64_t d = cfg_.n_embd;
  const int64_t qd = cfg_.is_recurrent_layer(cfg_.n_layer - 1) ? cfg_.ssm_value_dim() : cfg_.q_dim();
  int64_t m = 0;
  for (int64_t t = 0; t < batch.n_tokens(); ++t) {
    if (!batch.need_logits[static_cast<size_t>(t)]) continue;
    if (m != t) {
      std::memmove(ws.x.data() + m * d, ws.x.data() + t * d, static_cast<size_t>(d) * sizeof(float));
      std::memmove(ws.attn.data() + m * qd, ws.attn.data() + t * qd,
                   static_cast<size_t>(qd) * sizeof(float));
    }
    ++m;
  }
  return m;
}

Result<std::span<const float>> Model::forward(const Batch& batch, kv::KvCache& kv, Workspace& ws,
                                              ThreadPool& pool) const {
  RIDGE_RETURN_IF_ERROR(check_step(batch, kv, ws, pool));
  const int64_t n = batch.n_tokens();
  if (n == 0) return std::span<const float>();
  const int64_t d = cfg_.n_embd;
  std::fill(ws.moe.experts_run.begin(), ws.moe.experts_run.end(), 0);
  embed(batch, ws, pool);  // x: [n, n_embd]
  const bool recurrent = cfg_.n_recurrent_layers() > 0;
  if (recurrent) begin_recurrent_step(batch, kv.states(), ws);
  for (int64_t il = 0; il < cfg_.n_layer; ++il) {
    attention_block(il, batch, kv, ws, pool);
    // After the last attention only rows that need logits matter: drop the others so the last
    // FFN and the output head run on m rows (a prompt chunk usually needs one).
    const int64_t m = il + 1 == cfg_.n_layer ? gather_outputs(batch, ws) : n;
    if (m > 0) ffn_block(il, m, ws, pool);
  }
  if (recurrent) end_recurrent_step(batch, kv.states());
  const int64_t n_out = batch.n_outputs();
  if (n_out == 0) return std::span<const float>();
  for_rows(pool, n_out, d, [&](int64_t t) {
    rms_norm(ws.x.data() + t * d, w_.output_norm.data, ws.xn.data() + t * d, d, cfg_.rms_eps);
  });
  if (batch.output_hidden) return std::span<const float>(ws.xn.data(), static_cast<size_t>(n_out * d));
  matmul(*kernels_, w_.output, ws.xn.data(), n_out, ws.logits.data(), pool);  // [n_out, n_vocab]
  if (cfg_.final_logit_softcap > 0.0f) {
    const float cap = cfg_.final_logit_softcap;
    for_rows(pool, n_out, cfg_.n_vocab, [&](int64_t t) {
      float* z = ws.logits.data() + t * cfg_.n_vocab;
      for (int64_t i = 0; i < cfg_.n_vocab; ++i) z[i] = cap * std::tanh(z[i] / cap);
    });
  }
  return std::span<const float>(ws.logits.data(), static_cast<size_t>(n_out * cfg_.n_vocab));
}

}  // namespace ridge::model
