#include "model/workspace.h"

#include <algorithm>


namespace ridge::model {

namespace {

// a = n values of `mem` (kept through the status: the first failure is returned).
template <class T>
void allocate(DeviceMemory& mem, DeviceArray<T>& a, size_t n, Status& status) {
  if (!status.ok()) return;
  Result<DeviceArray<T>> r = DeviceArray<T>::create(mem, n);
  if (r.ok()) {
    a = std::move(*r);
  } else {
    status = r.status();
  }
}

}  // namespace

Result<Workspace> Workspace::create(const ModelConfig& cfg, const WorkspaceLimits& lim,
                                    DeviceMemory& mem) {
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
  Status st;
  const auto t = static_cast<size_t>(lim.max_tokens);
  allocate(mem, w.x, t * static_cast<size_t>(cfg.n_embd), st);
  allocate(mem, w.xn, t * static_cast<size_t>(cfg.n_embd), st);
  allocate(mem, w.q, t * static_cast<size_t>(q_dim), st);
  allocate(mem, w.k, t * static_cast<size_t>(kv_dim), st);
  allocate(mem, w.v, t * static_cast<size_t>(kv_dim), st);
  allocate(mem, w.attn, t * static_cast<size_t>(std::max(q_dim, cfg.ssm_value_dim())), st);
  allocate(mem, w.proj, t * static_cast<size_t>(cfg.n_embd), st);
  allocate(mem, w.gate, static_cast<size_t>(ffn_rows) * static_cast<size_t>(ffn_width), st);
  allocate(mem, w.up, static_cast<size_t>(ffn_rows) * static_cast<size_t>(ffn_width), st);
  if (cfg.is_moe()) {
    const size_t routed = t * static_cast<size_t>(k);
    allocate(mem, w.moe.probs, t * static_cast<size_t>(cfg.n_expert), st);
    allocate(mem, w.moe.expert, routed, st);
    allocate(mem, w.moe.weight, routed, st);
    allocate(mem, w.moe.row_of, routed, st);
    allocate(mem, w.moe.offsets, static_cast<size_t>(cfg.n_expert) + 1, st);
    allocate(mem, w.moe.x, routed * static_cast<size_t>(cfg.n_embd), st);
    allocate(mem, w.moe.y, routed * static_cast<size_t>(cfg.n_embd), st);
    w.moe.experts_run.resize(static_cast<size_t>(cfg.n_layer));
    if (cfg.moe_gemma4) {
      allocate(mem, w.moe.router_in, t * static_cast<size_t>(cfg.n_embd), st);
      allocate(mem, w.moe.out, t * static_cast<size_t>(cfg.n_embd), st);
    }
  }
  if (cfg.n_recurrent_layers() > 0) {
    const auto key = static_cast<size_t>(cfg.ssm_key_dim()), value = static_cast<size_t>(cfg.ssm_value_dim());
    const auto hv = static_cast<size_t>(cfg.ssm_n_v_heads);
    allocate(mem, w.lin.mixed, t * static_cast<size_t>(cfg.ssm_conv_dim()), st);
    allocate(mem, w.lin.z, t * value, st);
    allocate(mem, w.lin.beta, t * hv, st);
    allocate(mem, w.lin.g, t * hv, st);
    allocate(mem, w.lin.q, t * key, st);
    allocate(mem, w.lin.k, t * key, st);
    allocate(mem, w.lin.v, t * value, st);
  }
  if (lim.mtp) {
    if (!cfg.has_mtp()) return error("workspace: MTP buffers for a model without an MTP head");
    allocate(mem, w.mtp_hidden, t * static_cast<size_t>(cfg.n_embd), st);
    allocate(mem, w.mtp_h_in, t * static_cast<size_t>(cfg.n_embd), st);
    allocate(mem, w.mtp_cat, t * static_cast<size_t>(2 * cfg.n_embd), st);
  }
  if (cfg.attn_output_gate) allocate(mem, w.lin.q_gate, t * static_cast<size_t>(2 * q_dim), st);
  allocate(mem, w.rope_cos, t * static_cast<size_t>(cfg.rope_dims / 2 + 1), st);
  allocate(mem, w.rope_sin, t * static_cast<size_t>(cfg.rope_dims / 2 + 1), st);
  if (cfg.swa_rope_differs()) {
    allocate(mem, w.rope_cos_swa, t * static_cast<size_t>(cfg.swa_rope_dims() / 2 + 1), st);
    allocate(mem, w.rope_sin_swa, t * static_cast<size_t>(cfg.swa_rope_dims() / 2 + 1), st);
  }
  if (cfg.n_embd_per_layer > 0) {
    const auto p = static_cast<size_t>(cfg.n_embd_per_layer), layers = static_cast<size_t>(cfg.n_layer);
    allocate(mem, w.ple, layers * t * p, st);
    allocate(mem, w.ple_proj, t * layers * p, st);
    allocate(mem, w.ple_gate, t * p, st);
  }
  if (!lim.hidden_outputs) {
    allocate(mem, w.logits, static_cast<size_t>(lim.max_outputs) * static_cast<size_t>(cfg.n_vocab), st);
  }
  if (!st.ok()) return st.with_prefix("workspace");
  return w;
}

}  // namespace ridge::model
