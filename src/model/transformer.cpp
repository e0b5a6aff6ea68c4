// The forward pass shared by every architecture (what differs is bound in arch/*.cpp: optional
// biases and Q/K norms are applied when present), op by op on a Backend (model/backend.h).
#include <algorithm>
#include <cmath>

#include "model/backend.h"
#include "model/recurrent_batch.h"
#include "model/model.h"

namespace ridge::model {

Status Model::check_step(const Batch& batch, const kv::KvCache& kv, const Workspace& ws,
                         const Backend& backend) const {
  const kv::KvCacheConfig& kc = kv.config();
  const bool mtp = cache_has_mtp(kv);
  if (kc.n_layer != cfg_.n_kv_layers() && !mtp) {
    return error("forward: KV cache of {} layers, the model keeps KV in {}", kc.n_layer,
                 cfg_.n_kv_layers());
  }
  if (mtp && !ws.limits().mtp) return error("forward: a cache with the MTP layer needs a workspace with MTP buffers");
  if (!batch.mtp_h.empty() && static_cast<int64_t>(batch.mtp_h.size()) != batch.n_seqs() * cfg_.n_embd) {
    return error("forward: {} MTP hidden values for {} sequences of {}", batch.mtp_h.size(), batch.n_seqs(),
                 cfg_.n_embd);
  }
  for (int64_t il = 0; il < cfg_.n_layer + (mtp ? 1 : 0); ++il) {
    if (!cfg_.has_own_kv(il)) continue;
    const kv::KvLayerShape l = kc.layer(cfg_.kv_layer(il));
    if (l.n_head_kv != cfg_.layer_n_head_kv(il) || l.head_dim != cfg_.layer_head_dim(il)) {
      return error("forward: KV cache shape (kv heads {}, head dim {}) does not match the "
                   "model's layer {} ({}, {})", l.n_head_kv, l.head_dim, il,
                   cfg_.layer_n_head_kv(il), cfg_.layer_head_dim(il));
    }
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
  return check_limits(batch, kv, ws, backend);
}

Status Model::check_limits(const Batch& batch, const kv::KvCache& kv, const Workspace& ws,
                           const Backend& backend) const {
  const kv::KvCacheConfig& kc = kv.config();
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
  if (backend.n_threads() > lim.n_threads || kc.block_size != lim.block_size) {
    return error("forward: workspace made for {} threads / block size {}, used with {} / {}",
                 lim.n_threads, lim.block_size, backend.n_threads(), kc.block_size);
  }
  for (int32_t ctx : batch.context_lens) {
    if (ctx > lim.max_context) {
      return error("forward: context {} exceeds the workspace's {}", ctx, lim.max_context);
    }
  }
  return batch.validate({cfg_.n_vocab, kv.n_blocks(), kv.block_size(), kv.n_blocks_window(), cfg_.n_swa});
}

void Model::embed(Workspace& ws, Backend& backend) const { backend.embed(embed_op(w_.token_embd, ws)); }

EmbedOp Model::embed_op(const kernels::WeightView& table, Workspace& ws) const {
  EmbedOp op;
  op.table = &table;
  // Gemma: embeddings times sqrt(n_embd), in f32 as llama.cpp scales them.
  op.scale = cfg_.scale_embeddings ? std::sqrt(static_cast<float>(cfg_.n_embd)) : 1.0f;
  op.x = ws.x.data();
  op.d = cfg_.n_embd;
  // Rope cosines/sines of each token, shared by all layers and heads (sliding-window layers
  // have a table of their own where their base or scale differs).
  op.cfg = &cfg_;
  op.rope_factors = rope_factors_.data();
  op.rope_factors_swa = rope_factors_swa_.data();
  op.yarn = &yarn_;
  op.cos = ws.rope_cos.data();
  op.sin = ws.rope_sin.data();
  if (cfg_.swa_rope_differs()) {
    op.cos_swa = ws.rope_cos_swa.data();
    op.sin_swa = ws.rope_sin_swa.data();
  }
  return op;
}

void Model::attention_block(int64_t il, int64_t n, kv::KvCache& kv, Workspace& ws,
                            Backend& backend, bool attend) const {
  const LayerWeights& l = layer(il);
  const int64_t d = cfg_.n_embd;
  backend.rms_norm(ws.x.data(), l.attn_norm.data, ws.xn.data(), n, d, cfg_.rms_eps);
  if (cfg_.is_recurrent_layer(il)) {
    backend.gated_delta_net(cfg_, l, il, kv.states(), ws);  // attn: [n, Dv]
    return;
  }
  const int64_t hd = cfg_.layer_head_dim(il), n_head_kv = cfg_.layer_n_head_kv(il);
  const int64_t qd = cfg_.n_head * hd, kvd = n_head_kv * hd;
  // q: [n, q_dim], k and v: [n, kv_dim], in one group over one quantized xn. A gated layer's wq
  // gives each head's q then its gate ([n, 2 q_dim]), split by attention_input. A layer that
  // reads another layer's KV computes q alone; one without attn_v takes v from k (gemma4).
  const bool gated = cfg_.attn_output_gate;
  const bool own_kv = cfg_.has_own_kv(il);
  // Without attending (the MTP layer's K/V in a trunk step) q is not needed: the op's q stays
  // whatever the buffers held.
  kernels::MatmulTarget qkv[3] = {{&l.wq, gated ? ws.lin.q_gate.data() : ws.q.data(), gated ? 2 * qd : qd}};
  size_t n_targets = attend ? 1 : 0;
  if (own_kv) {
    qkv[n_targets++] = {&l.wk, ws.k.data(), kvd};
    if (l.wv.data != nullptr) qkv[n_targets++] = {&l.wv, ws.v.data(), kvd};
  }
  backend.matmul_group(std::span(qkv, n_targets), ws.xn.data(), d, n);
  // Sliding-window layers rotate with their own table where it differs (embed()).
  const bool own_table = !ws.rope_cos_swa.empty() && cfg_.is_swa_layer(il);
  AttentionInputOp in;
  in.q = ws.q.data();
  in.k = ws.k.data();
  in.v = ws.v.data();
  in.q_gate = gated ? ws.lin.q_gate.data() : nullptr;
  in.bq = l.bq ? l.bq.data : nullptr;
  in.bk = l.bk ? l.bk.data : nullptr;
  in.bv = l.bv ? l.bv.data : nullptr;
  in.q_norm = l.q_norm ? l.q_norm.data : nullptr;
  in.k_norm = l.k_norm ? l.k_norm.data : nullptr;
  in.v_from_k = own_kv && l.wv.data == nullptr;
  in.v_norm = cfg_.v_norm;
  in.n_head = cfg_.n_head;
  in.n_head_kv = n_head_kv;
  in.head_dim = hd;
  in.eps = cfg_.rms_eps;
  in.rope_dims = cfg_.layer_rope_dims(il);
  in.rope_layout = cfg_.rope_layout;
  in.cos = (own_table ? ws.rope_cos_swa : ws.rope_cos).data();
  in.sin = (own_table ? ws.rope_sin_swa : ws.rope_sin).data();
  in.cache = own_kv ? &kv : nullptr;
  in.kv_layer = cfg_.kv_layer(il);
  backend.attention_input(in);
  if (!attend) return;
  AttentionOp a;
  a.q = ws.q.data();
  a.out = ws.attn.data();
  a.cache = &kv;
  a.layer = in.kv_layer;
  a.n_head = cfg_.n_head;
  a.n_head_kv = n_head_kv;
  a.head_dim = hd;
  a.scale = cfg_.attention_scale();
  a.window = cfg_.is_swa_layer(il) ? cfg_.n_swa : 0;
  a.sinks = l.attn_sinks ? l.attn_sinks.data : nullptr;
  a.softcap = cfg_.attn_softcap;
  backend.attention(a, in.q_gate);
}

// The attention output projection, the residual add, and the FFN, for the first m rows.
void Model::ffn_block(int64_t il, int64_t m, Workspace& ws, Backend& backend) const {
  const LayerWeights& l = layer(il);
  const int64_t d = cfg_.n_embd;
  backend.matmul(l.wo, ws.attn.data(), l.wo.cols, m, ws.proj.data(), l.wo.rows);  // [m, n_embd]
  ResidualOp r = post_normed_add(ws.proj.data(), l.attn_post_norm ? l.attn_post_norm.data : nullptr,
                                 ws.x.data(), m);
  r.bias = l.bo ? l.bo.data : nullptr;
  r.next_norm = l.ffn_norm.data;
  r.xn = ws.xn.data();
  backend.residual(r);
  if (cfg_.moe_gemma4) {
    gemma4_moe_ffn(il, m, ws, backend);  // [m, n_embd] into proj
  } else if (cfg_.is_moe()) {
    backend.moe_ffn(cfg_, l, il, m, ws, ws.proj.data());  // [m, n_embd]
  } else {
    GatedFfn ffn{&l.w_gate, &l.w_up, &l.w_down};
    ffn.act = cfg_.ffn_gelu ? FfnActivation::kGeglu : FfnActivation::kSwiglu;
    backend.gated_ffn(ffn, ws.xn.data(), d, m, ws.gate.data(), ws.up.data(), ws.proj.data(),
                      d);  // [m, n_embd]
  }
  backend.residual(post_normed_add(ws.proj.data(), l.ffn_post_norm ? l.ffn_post_norm.data : nullptr,
                                   ws.x.data(), m));
  if (cfg_.n_embd_per_layer > 0) per_layer_block(il, m, ws, backend);
  if (l.out_scale) backend.scale(ws.x.data(), m, d, l.output_scale);
}

// Gemma 4's MoE layer: proj = RMSNorm(dense FFN(xn)) * post_ffw_norm_1 + RMSNorm(experts(
// RMSNorm(x) * pre_ffw_norm_2)) * post_ffw_norm_2 (xn: ffn_norm's, from the residual op).
void Model::gemma4_moe_ffn(int64_t il, int64_t m, Workspace& ws, Backend& backend) const {
  const LayerWeights& l = w_.layers[static_cast<size_t>(il)];
  const int64_t d = cfg_.n_embd;
  GatedFfn dense{&l.w_gate, &l.w_up, &l.w_down};
  dense.act = FfnActivation::kGeglu;
  backend.gated_ffn(dense, ws.xn.data(), d, m, ws.gate.data(), ws.up.data(), ws.proj.data(), d);
  backend.rms_norm(ws.proj.data(), l.post_ffn_norm_1.data, ws.proj.data(), m, d, cfg_.rms_eps);
  backend.rms_norm(ws.x.data(), l.pre_ffn_norm_2.data, ws.xn.data(), m, d, cfg_.rms_eps);
  backend.moe_ffn(cfg_, l, il, m, ws, ws.moe.out.data());
  backend.residual(post_normed_add(ws.moe.out.data(), l.post_ffn_norm_2.data, ws.proj.data(), m));
}

void Model::per_layer_inputs(int64_t n, Workspace& ws, Backend& backend) const {
  const int64_t p = cfg_.n_embd_per_layer, width = cfg_.n_layer * p;
  // The projection of the scaled embeddings (x before the first layer): [n, n_layer * p].
  backend.matmul(w_.ple_model_proj, ws.x.data(), cfg_.n_embd, n, ws.ple_proj.data(), width);
  PerLayerInputOp op;
  op.table = &w_.ple_token_embd;
  op.proj = ws.ple_proj.data();
  op.proj_norm = w_.ple_proj_norm.data;
  op.n_layer = cfg_.n_layer;
  op.p = p;
  op.n_embd = cfg_.n_embd;
  op.eps = cfg_.rms_eps;
  op.out = ws.ple_rows(0, p);
  op.ld_layer = ws.ple_rows(1, p) - op.out;
  backend.per_layer_inputs(op);
}

void Model::per_layer_block(int64_t il, int64_t m, Workspace& ws, Backend& backend) const {
  const LayerWeights& l = w_.layers[static_cast<size_t>(il)];
  const int64_t d = cfg_.n_embd, p = cfg_.n_embd_per_layer;
  const float* input = ws.ple_rows(il, p);  // [m, p]
  backend.matmul(l.ple_gate, ws.x.data(), d, m, ws.ple_gate.data(), p);  // [m, p]
  backend.geglu(ws.ple_gate.data(), input, ws.ple_gate.data(), m, p);
  backend.matmul(l.ple_proj, ws.ple_gate.data(), p, m, ws.proj.data(), d);  // [m, n_embd]
  backend.residual(post_normed_add(ws.proj.data(), l.ple_post_norm.data, ws.x.data(), m));
}

ResidualOp Model::post_normed_add(float* proj, const float* post_norm, float* x, int64_t m) const {
  ResidualOp r;
  r.m = m;
  r.d = cfg_.n_embd;
  r.eps = cfg_.rms_eps;
  r.proj = proj;
  r.post_norm = post_norm;
  r.x = x;
  return r;
}

Result<std::span<const float>> Model::forward(const Batch& batch, kv::KvCache& kv, Workspace& ws,
                                              Backend& backend) const {
  RIDGE_RETURN_IF_ERROR(check_step(batch, kv, ws, backend));
  if (batch.n_tokens() == 0) return std::span<const float>();
  backend.begin_step(batch);
  const std::span<const float> out = run_layers(batch, kv, ws, backend);
  backend.end_step();
  return to_host(out, ws, backend);
}

std::span<const float> Model::to_host(std::span<const float> rows, Workspace& ws,
                                      Backend& backend) {
  DeviceMemory& mem = backend.memory();
  if (mem.host_visible() || rows.empty()) return rows;
  ws.host_out.resize(rows.size());
  mem.to_host(ws.host_out.data(), rows.data(), rows.size_bytes());
  return ws.host_out;
}

std::span<const float> Model::run_layers(const Batch& batch, kv::KvCache& kv, Workspace& ws,
                                         Backend& backend) const {
  const int64_t n = batch.n_tokens();
  const int64_t d = cfg_.n_embd;
  const int64_t n_out = batch.n_outputs();
  std::fill(ws.moe.experts_run.begin(), ws.moe.experts_run.end(), 0);
  embed(ws, backend);  // x: [n, n_embd]
  if (cfg_.n_embd_per_layer > 0) per_layer_inputs(n, ws, backend);
  const bool recurrent = cfg_.n_recurrent_layers() > 0;
  // The MTP layer's K/V need every row's hidden state: then every row runs the last layer.
  const bool mtp = cache_has_mtp(kv);
  if (recurrent) backend.begin_recurrent(kv.states(), ws);
  for (int64_t il = 0; il < cfg_.n_layer; ++il) {
    attention_block(il, n, kv, ws, backend);
    // After the last attention only rows that need logits matter: drop the others so the last
    // FFN and the output head run on m rows (a prompt chunk usually needs one).
    int64_t m = n;
    if (il + 1 == cfg_.n_layer && !mtp) {
      const int64_t qd = cfg_.is_recurrent_layer(il) ? cfg_.ssm_value_dim() : cfg_.layer_q_dim(il);
      const int64_t p = cfg_.n_embd_per_layer;
      const RowBuffer rows[] = {{ws.x.data(), d}, {ws.attn.data(), qd},
                                {p > 0 ? ws.ple_rows(il, p) : nullptr, p}};
      backend.keep_output_rows(std::span(rows, p > 0 ? 3 : 2));
      m = n_out;
    }
    if (m > 0) ffn_block(il, m, ws, backend);
  }
  if (recurrent) backend.end_recurrent(kv.states());
  if (mtp) {
    backend.rms_norm(ws.x.data(), w_.output_norm.data, ws.mtp_hidden.data(), n, d, cfg_.rms_eps);
    mtp_kv(batch, kv, ws, backend);
    if (n_out == 0) return {};
    backend.copy_rows(ws.mtp_hidden.data(), d, ws.xn.data(), d, n, d);
    const RowBuffer rows[] = {{ws.xn.data(), d}};
    backend.keep_output_rows(rows);
  } else {
    if (n_out == 0) return {};
    backend.rms_norm(ws.x.data(), w_.output_norm.data, ws.xn.data(), n_out, d, cfg_.rms_eps);
  }
  if (batch.output_hidden) return std::span<const float>(ws.xn.data(), static_cast<size_t>(n_out * d));
  const kernels::WeightView& head = w_.output;
  backend.matmul(head, ws.xn.data(), head.cols, n_out, ws.logits.data(), head.rows);  // [n_out, n_vocab]
  if (cfg_.final_logit_softcap > 0.0f) {
    backend.softcap(ws.logits.data(), n_out, cfg_.n_vocab, cfg_.final_logit_softcap);
  }
  return std::span<const float>(ws.logits.data(), static_cast<size_t>(n_out * cfg_.n_vocab));
}

}  // namespace ridge::model
