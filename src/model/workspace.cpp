#include "model/workspace.h"

#include <algorithm>

#include "model/attention.h"

namespace ridge::model {

Result<Workspace> Workspace::create(const ModelConfig& cfg, const WorkspaceLimits& lim) {
  if (lim.max_tokens <= 0 || lim.max_outputs <= 0 || lim.max_outputs > lim.max_tokens ||
      lim.max_context <= 0 || lim.n_threads <= 0 || lim.block_size <= 0) {
    return error("workspace: invalid limits (tokens {}, outputs {}, context {}, threads {})",
                 lim.max_tokens, lim.max_outputs, lim.max_context, lim.n_threads);
  }
  // The FFN buffers hold a dense FFN's rows, or one expert's (an expert sees a token once).
  const int64_t k = cfg.is_moe() ? cfg.n_expert_used : 0;
  // gemma4's MoE layers: its dense FFN, and a fused gate | up of 2 n_ff_exp per expert row.
  const int64_t ffn_width = !cfg.is_moe()   ? cfg.max_n_ff()
                            : cfg.moe_gemma4 ? std::max(2 * cfg.n_ff_exp, cfg.max_n_ff())
                                             : std::max(cfg.n_ff_exp, cfg.n_ff_shexp);
  const int64_t ffn_rows = lim.max_tokens;
  const int64_t q_dim = cfg.max_q_dim(), kv_dim = cfg.max_kv_dim();
  const int64_t ple = cfg.n_embd_per_layer * (2 * cfg.n_layer + 1);
  const double floats = static_cast<double>(lim.max_tokens) *
                            static_cast<double>(4 * cfg.n_embd + 2 * q_dim + 2 * kv_dim +
                                                cfg.rope_dims + cfg.swa_rope_dims() + cfg.n_expert +
                                                2 * k * (cfg.n_embd + 1) + 3 * cfg.ssm_conv_dim() +
                                                2 * cfg.ssm_value_dim() + ple) +
                        static_cast<double>(ffn_rows) * static_cast<double>(2 * ffn_width) +
                        static_cast<double>(lim.max_outputs) * static_cast<double>(cfg.n_vocab);
  if (floats > 1e10) return error("workspace: {} floats is too large; lower the batch size", floats);
  Workspace w;
  w.limits_ = lim;
  const auto t = static_cast<size_t>(lim.max_tokens);
  w.x.resize(t * static_cast<size_t>(cfg.n_embd));
  w.xn.resize(t * static_cast<size_t>(cfg.n_embd));
  w.q.resize(t * static_cast<size_t>(q_dim));
  w.k.resize(t * static_cast<size_t>(kv_dim));
  w.v.resize(t * static_cast<size_t>(kv_dim));
  w.attn.resize(t * static_cast<size_t>(std::max(q_dim, cfg.ssm_value_dim())));
  w.proj.resize(t * static_cast<size_t>(cfg.n_embd));
  w.gate.resize(static_cast<size_t>(ffn_rows) * static_cast<size_t>(ffn_width));
  w.up.resize(static_cast<size_t>(ffn_rows) * static_cast<size_t>(ffn_width));
  if (cfg.is_moe()) {
    const size_t routed = t * static_cast<size_t>(k);
    w.moe.probs.resize(t * static_cast<size_t>(cfg.n_expert));
    w.moe.expert.resize(routed);
    w.moe.weight.resize(routed);
    w.moe.row_of.resize(routed);
    w.moe.offsets.resize(static_cast<size_t>(cfg.n_expert) + 1);
    w.moe.x.resize(routed * static_cast<size_t>(cfg.n_embd));
    w.moe.y.resize(routed * static_cast<size_t>(cfg.n_embd));
    w.moe.experts_run.resize(static_cast<size_t>(cfg.n_layer));
    if (cfg.moe_gemma4) {
      w.moe.router_in.resize(t * static_cast<size_t>(cfg.n_embd));
      w.moe.out.resize(t * static_cast<size_t>(cfg.n_embd));
    }
  }
  if (cfg.n_recurrent_layers() > 0) {
    const auto key = static_cast<size_t>(cfg.ssm_key_dim()), value = static_cast<size_t>(cfg.ssm_value_dim());
    const auto hv = static_cast<size_t>(cfg.ssm_n_v_heads);
    w.lin.mixed.resize(t * static_cast<size_t>(cfg.ssm_conv_dim()));
    w.lin.z.resize(t * value);
    w.lin.beta.resize(t * hv);
    w.lin.g.resize(t * hv);
    w.lin.q.resize(t * key);
    w.lin.k.resize(t * key);
    w.lin.v.resize(t * value);
  }
  if (lim.mtp) {
    if (!cfg.has_mtp()) return error("workspace: MTP buffers for a model without an MTP head");
    w.mtp_hidden.resize(t * static_cast<size_t>(cfg.n_embd));
    w.mtp_h_in.resize(t * static_cast<size_t>(cfg.n_embd));
    w.mtp_cat.resize(t * static_cast<size_t>(2 * cfg.n_embd));
  }
  if (cfg.attn_output_gate) w.lin.q_gate.resize(t * static_cast<size_t>(2 * q_dim));
  w.rope_cos.resize(t * static_cast<size_t>(cfg.rope_dims / 2 + 1));
  w.rope_sin.resize(t * static_cast<size_t>(cfg.rope_dims / 2 + 1));
  if (cfg.swa_rope_differs()) {
    w.rope_cos_swa.resize(t * static_cast<size_t>(cfg.swa_rope_dims() / 2 + 1));
    w.rope_sin_swa.resize(t * static_cast<size_t>(cfg.swa_rope_dims() / 2 + 1));
  }
  if (cfg.n_embd_per_layer > 0) {
    const auto p = static_cast<size_t>(cfg.n_embd_per_layer), layers = static_cast<size_t>(cfg.n_layer);
    w.ple.resize(layers * t * p);
    w.ple_proj.resize(t * layers * p);
    w.ple_gate.resize(t * p);
  }
  if (!lim.hidden_outputs) {
    w.logits.resize(static_cast<size_t>(lim.max_outputs) * static_cast<size_t>(cfg.n_vocab));
  }
  for (int64_t il = 0; il < cfg.n_layer; ++il) {  // the layer that needs the most
    w.attn_scratch_per_thread = std::max(
        w.attn_scratch_per_thread,
        attention_scratch_floats(cfg.n_head, cfg.layer_n_head_kv(il), cfg.layer_head_dim(il),
                                 lim.block_size, lim.max_context));
  }
  w.attn_scratch.resize(static_cast<size_t>(lim.n_threads) *
                        static_cast<size_t>(w.attn_scratch_per_thread));
  return w;
}

}  // namespace ridge::model
