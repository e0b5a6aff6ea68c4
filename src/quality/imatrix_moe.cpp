// The importance-matrix recorder's mixture-of-experts FFN: the op runs first (routing, experts,
// shared expert), then its inputs are recorded from the workspace it leaves: the router's input,
// every routed (token, slot) row under its expert, the experts' down inputs recomputed from
// those rows, and a shared expert's.
#include "backend/cpu/moe_ffn.h"
#include "quality/imatrix_backend.h"

#include <cstring>

namespace ridge::quality {

void RecordingBackend::record_expert(const model::ModelConfig& cfg, const model::LayerWeights& l, int64_t e,
                                     int64_t n) {
  const int64_t d = cfg.n_embd, n_exp = cfg.n_expert, ff = cfg.n_ff_exp;
  const auto ei = static_cast<size_t>(e);
  const float* x = rows_.data();
  if (!l.exp_gate_up.empty()) {  // gemma4: gate | up fused, GeGLU of the halves
    record_rows(l.exp_gate_up[0].data, d, x, d, n, e, n_exp);
    gate_.resize(static_cast<size_t>(n * 2 * ff));
    up_.resize(static_cast<size_t>(n * ff));
    inner_->matmul(l.exp_gate_up[ei], x, d, n, gate_.data(), 2 * ff);
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t i = 0; i < ff; ++i) {
        up_[static_cast<size_t>(t * ff + i)] = model::geglu(gate_[static_cast<size_t>(t * 2 * ff + i)],
                                                            gate_[static_cast<size_t>(t * 2 * ff + ff + i)]);
      }
    }
    record_rows(l.exp_down[0].data, ff, up_.data(), ff, n, e, n_exp);
    return;
  }
  record_rows(l.exp_gate[0].data, d, x, d, n, e, n_exp);
  record_rows(l.exp_up[0].data, d, x, d, n, e, n_exp);
  const model::GatedFfn f = backend::cpu::routed_expert_ffn(cfg, l, e);
  record_rows(l.exp_down[0].data, ff, down_input(f, x, d, n), ff, n, e, n_exp);
}

void RecordingBackend::moe_ffn(const model::ModelConfig& cfg, const model::LayerWeights& l, int64_t il, int64_t m,
                               model::Workspace& ws, float* out) {
  inner_->moe_ffn(cfg, l, il, m, ws, out);
  const int64_t d = cfg.n_embd, top = cfg.n_expert_used;
  const model::MoeWorkspace& w = ws.moe;
  record(l.router, cfg.moe_gemma4 ? w.router_in.data() : ws.xn.data(), d, m);
  // Each expert's rows, tokens in order (llama-imatrix sums every (token, slot) of MUL_MAT_ID,
  // whatever the step's size).
  rows_.resize(static_cast<size_t>(m * d));
  for (int64_t e = 0; e < cfg.n_expert; ++e) {
    int64_t n = 0;
    for (int64_t i = 0; i < m * top; ++i) {
      if (w.expert[static_cast<size_t>(i)] != e) continue;
      std::memcpy(rows_.data() + n * d, ws.xn.data() + (i / top) * d, static_cast<size_t>(d) * sizeof(float));
      ++n;
    }
    if (n > 0) record_expert(cfg, l, e, n);
  }
  if (cfg.n_ff_shexp > 0) {
    const model::GatedFfn shared{&l.w_gate, &l.w_up, &l.w_down};
    record(l.w_gate, ws.xn.data(), d, m);
    record(l.w_up, ws.xn.data(), d, m);
    if (m >= kMinRows) record(l.w_down, down_input(shared, ws.xn.data(), d, m), l.w_gate.rows, m);
    if (m >= kMinRows) record_rows(l.shexp_gate.data, d, ws.xn.data(), d, m, 0, 1);
  }
}

}  // namespace ridge::quality
