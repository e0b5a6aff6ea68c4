#include "model/workspace.h"

#include "model/attention.h"

namespace ridge::model {

Result<Workspace> Workspace::create(const ModelConfig& cfg, const WorkspaceLimits& lim) {
  if (lim.max_tokens <= 0 || lim.max_outputs <= 0 || lim.max_outputs > lim.max_tokens ||
      lim.max_context <= 0 || lim.n_threads <= 0 || lim.block_size <= 0) {
    return error("workspace: invalid limits (tokens {}, outputs {}, context {}, threads {})",
                 lim.max_tokens, lim.max_outputs, lim.max_context, lim.n_threads);
  }
  const double floats = static_cast<double>(lim.max_tokens) *
                            static_cast<double>(4 * cfg.n_embd + 2 * cfg.q_dim() +
                                                2 * cfg.kv_dim() + 2 * cfg.n_ff + cfg.rope_dims) +
                        static_cast<double>(lim.max_outputs) * static_cast<double>(cfg.n_vocab);
  if (floats > 1e10) return error("workspace: {} floats is too large; lower the batch size", floats);
  Workspace w;
  w.limits_ = lim;
  const auto t = static_cast<size_t>(lim.max_tokens);
  w.x.resize(t * static_cast<size_t>(cfg.n_embd));
  w.xn.resize(t * static_cast<size_t>(cfg.n_embd));
  w.q.resize(t * static_cast<size_t>(cfg.q_dim()));
  w.k.resize(t * static_cast<size_t>(cfg.kv_dim()));
  w.v.resize(t * static_cast<size_t>(cfg.kv_dim()));
  w.attn.resize(t * static_cast<size_t>(cfg.q_dim()));
  w.proj.resize(t * static_cast<size_t>(cfg.n_embd));
  w.gate.resize(t * static_cast<size_t>(cfg.n_ff));
  w.up.resize(t * static_cast<size_t>(cfg.n_ff));
  w.rope_cos.resize(t * static_cast<size_t>(cfg.rope_dims / 2 + 1));
  w.rope_sin.resize(t * static_cast<size_t>(cfg.rope_dims / 2 + 1));
  if (!lim.hidden_outputs) {
    w.logits.resize(static_cast<size_t>(lim.max_outputs) * static_cast<size_t>(cfg.n_vocab));
  }
  w.attn_scratch_per_thread = attention_scratch_floats(cfg.n_head, cfg.n_head_kv, cfg.head_dim,
                                                       lim.block_size, lim.max_context);
  w.attn_scratch.resize(static_cast<size_t>(lim.n_threads) *
                        static_cast<size_t>(w.attn_scratch_per_thread));
  return w;
}

}  // namespace ridge::model
