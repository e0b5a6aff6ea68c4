#include "backend/cpu/moe_ffn.h"
#include "backend/cpu/gated_ffn.h"
#include "backend/cpu/model_names.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/ffn.h"
#include "backend/cpu/for_rows.h"
#include "model/ops.h"

namespace ridge::backend::cpu {

void route_token(const ModelConfig& cfg, const float* probs, int32_t* expert, float* weight) {
  const int64_t n = cfg.n_expert, k = cfg.n_expert_used;
  int64_t filled = 0;  // expert[0, filled) sorted by descending probability
  for (int64_t e = 0; e < n; ++e) {
    const float p = probs[e];
    if (filled == k && !(p > weight[k - 1])) continue;
    int64_t at = filled < k ? filled++ : k - 1;
    for (; at > 0 && p > weight[at - 1]; --at) {  // strict: an equal one keeps the lower id first
      expert[at] = expert[at - 1];
      weight[at] = weight[at - 1];
    }
    expert[at] = static_cast<int32_t>(e);
    weight[at] = p;
  }
  if (cfg.moe_softmax_after_topk) softmax(weight, k);  // gpt-oss: over the picked logits
  if (cfg.moe_norm_topk) {
    float sum = 0.0f;
    for (int64_t s = 0; s < k; ++s) sum += weight[s];
    sum = std::max(sum, 6.103515625e-5f);  // llama.cpp's guard: the smallest normal f16
    for (int64_t s = 0; s < k; ++s) weight[s] /= sum;
  }
  if (cfg.expert_weights_scale != 1.0f) {
    for (int64_t s = 0; s < k; ++s) weight[s] *= cfg.expert_weights_scale;
  }
}

GatedFfn routed_expert_ffn(const ModelConfig& cfg, const LayerWeights& l, int64_t e) {
  const auto ei = static_cast<size_t>(e);
  GatedFfn ffn{&l.exp_gate[ei], &l.exp_up[ei], &l.exp_down[ei]};
  if (cfg.moe_swiglu_oai) {
    ffn.gate_bias = l.exp_gate_bias.data + e * cfg.n_ff_exp;
    ffn.up_bias = l.exp_up_bias.data + e * cfg.n_ff_exp;
    ffn.down_bias = l.exp_down_bias.data + e * cfg.n_embd;
    ffn.act = FfnActivation::kSwigluOai;
  }
  if (cfg.moe_gemma4) ffn.act = FfnActivation::kGeglu;
  return ffn;
}

void moe_ffn(const ModelConfig& cfg, const LayerWeights& l, int64_t il, const kernels::Kernels& k,
             int64_t m, Workspace& ws, float* out, ThreadPool& pool) {
  const int64_t d = cfg.n_embd, n_exp = cfg.n_expert, top = cfg.n_expert_used;
  MoeWorkspace& w = ws.moe;
  // Router: probabilities of every expert, then each token's top-k. Gemma 4 routes from the
  // residual x: RMSNorm(x) / sqrt(n_embd) * ffn_gate_inp.scale, rounded step by step as ggml.
  const float* router_in = ws.xn.data();
  if (cfg.moe_gemma4) {
    const float inv_sqrt_d = 1.0f / std::sqrt(static_cast<float>(d));
    for_rows(pool, m, d, [&](int64_t t) {
      float* r = w.router_in.data() + t * d;
      rms_norm(ws.x.data() + t * d, nullptr, r, d, cfg.rms_eps);
      for (int64_t i = 0; i < d; ++i) r[i] *= inv_sqrt_d;
      for (int64_t i = 0; i < d; ++i) r[i] *= l.router_scale.data[i];
    });
    router_in = w.router_in.data();
  }
  k.matmul(l.router, router_in, d, m, w.probs.data(), n_exp, pool);  // [m, n_expert]
  for (int64_t t = 0; t < m; ++t) {
    float* p = w.probs.data() + t * n_exp;
    if (l.router_bias) add_inplace(p, l.router_bias.data, n_exp);
    if (!cfg.moe_softmax_after_topk) softmax(p, n_exp);
    route_token(cfg, p, w.expert.data() + t * top, w.weight.data() + t * top);
  }
  // Group (token, slot) pairs by expert, tokens in order within an expert (a counting sort).
  std::fill(w.offsets.begin(), w.offsets.end(), 0);
  for (int64_t i = 0; i < m * top; ++i) ++w.offsets[static_cast<size_t>(w.expert[static_cast<size_t>(i)]) + 1];
  for (int64_t e = 0; e < n_exp; ++e) w.offsets[static_cast<size_t>(e) + 1] += w.offsets[static_cast<size_t>(e)];
  // offsets[e] serves as expert e's cursor (ending at e + 1's start), then shifts back one place.
  for (int64_t i = 0; i < m * top; ++i) {
    w.row_of[static_cast<size_t>(i)] = w.offsets[static_cast<size_t>(w.expert[static_cast<size_t>(i)])]++;
  }
  std::copy_backward(w.offsets.begin(), w.offsets.end() - 1, w.offsets.end());
  w.offsets[0] = 0;
  for_rows(pool, m, top * d, [&](int64_t t) {
    for (int64_t s = 0; s < top; ++s) {
      const int64_t row = w.row_of[static_cast<size_t>(t * top + s)];
      std::memcpy(w.x.data() + row * d, ws.xn.data() + t * d, static_cast<size_t>(d) * sizeof(float));
    }
  });
  // Each selected expert once, on all of its rows.
  int64_t run = 0;
  for (int64_t e = 0; e < n_exp; ++e) {
    const int64_t r0 = w.offsets[static_cast<size_t>(e)], n_rows = w.offsets[static_cast<size_t>(e) + 1] - r0;
    if (n_rows == 0) continue;
    ++run;
    const auto ei = static_cast<size_t>(e);
    float* y = w.y.data() + r0 * d;
    if (!l.exp_gate_up.empty()) {  // gemma4's fused gate | up: one matmul, GeGLU of the halves
      const int64_t ff = cfg.n_ff_exp;
      k.matmul(l.exp_gate_up[ei], w.x.data() + r0 * d, d, n_rows, ws.gate.data(), 2 * ff, pool);
      for_rows(pool, n_rows, ff, [&](int64_t t) {
        const float* g = ws.gate.data() + t * 2 * ff;
        float* u = ws.up.data() + t * ff;
        for (int64_t i = 0; i < ff; ++i) u[i] = geglu(g[i], g[ff + i]);
      });
      k.matmul(l.exp_down[ei], ws.up.data(), ff, n_rows, y, d, pool);
    } else {
      gated_ffn(k, routed_expert_ffn(cfg, l, e), w.x.data() + r0 * d, d, n_rows, ws.gate.data(), ws.up.data(), y, d,
                pool);
    }
    if (l.exp_scale) {  // gemma4: the expert's output times its scale, before its weight
      const float sc = l.exp_scale.data[e];
      for_rows(pool, n_rows, d, [&](int64_t t) {
        for (int64_t i = 0; i < d; ++i) y[t * d + i] *= sc;
      });
    }
  }
  if (static_cast<size_t>(il) < w.experts_run.size()) w.experts_run[static_cast<size_t>(il)] = run;  // not the MTP block
  // The shared expert (qwen2moe) into x, which the routed experts no longer need.
  const bool shared = cfg.n_ff_shexp > 0;
  if (shared) {
    gated_ffn(k, GatedFfn{&l.w_gate, &l.w_up, &l.w_down}, ws.xn.data(), d, m, ws.gate.data(),
              ws.up.data(), w.x.data(), d, pool);
  }
  // out = the sum over the token's slots, in slot order, of weight * expert output, as llama.cpp
  // adds them; then + sigmoid(xn . shexp_gate) * shared.
  for_rows(pool, m, top * d, [&](int64_t t) {
    float* o = out + t * d;
    const float* wt = w.weight.data() + t * top;
    auto expert_row = [&](int64_t s) {
      return w.y.data() + static_cast<int64_t>(w.row_of[static_cast<size_t>(t * top + s)]) * d;
    };
    const float* y0 = expert_row(0);
    for (int64_t i = 0; i < d; ++i) o[i] = y0[i] * wt[0];
    for (int64_t s = 1; s < top; ++s) {
      const float* ys = expert_row(s);
      for (int64_t i = 0; i < d; ++i) o[i] += ys[i] * wt[s];
    }
    if (shared) {
      const float g = 1.0f / (1.0f + std::exp(-dot_f32(ws.xn.data() + t * d, l.shexp_gate.data, d)));
      const float* sx = w.x.data() + t * d;
      for (int64_t i = 0; i < d; ++i) o[i] += sx[i] * g;
    }
  });
}

}  // namespace ridge::backend::cpu
