#include "backend/cpu/gated_ffn.h"

#include <span>

#include "backend/cpu/isa_table.h"

namespace ridge::backend::cpu {
namespace {

using model::FfnActivation;
using model::GatedFfn;

// Columns [j0, j1) of gate: [m, n_ff] become silu(gate) * up (a matmul_group epilogue), gemma's
// GeGLU, or, with biases or the gpt-oss activation, act(gate + gate_bias, up + up_bias).
struct SwigluColumns {
  SwigluFn fn;
  float* gate;
  float* up;
  int64_t m, n_ff;
  const GatedFfn* w;
};
void swiglu_columns(void* ctx, int64_t j0, int64_t j1) {
  const auto& c = *static_cast<const SwigluColumns*>(ctx);
  const GatedFfn& w = *c.w;
  for (int64_t t = 0; t < c.m; ++t) {
    float* g = c.gate + t * c.n_ff;
    float* u = c.up + t * c.n_ff;
    if (w.gate_bias != nullptr) {
      for (int64_t j = j0; j < j1; ++j) g[j] += w.gate_bias[j];
    }
    if (w.up_bias != nullptr) {
      for (int64_t j = j0; j < j1; ++j) u[j] += w.up_bias[j];
    }
    if (w.act == FfnActivation::kSwigluOai) {
      for (int64_t j = j0; j < j1; ++j) g[j] = model::swiglu_oai(g[j], u[j]);
    } else if (w.act == FfnActivation::kGeglu) {
      const float* table = model::gelu_f16_table();
      for (int64_t j = j0; j < j1; ++j) g[j] = model::geglu_with(table, g[j], u[j]);
    } else {
      c.fn(g + j0, u + j0, g + j0, j1 - j0);
    }
  }
}

}  // namespace

void gated_ffn(const kernels::Kernels& k, const GatedFfn& w, const float* x, int64_t ldx,
               int64_t m, float* gate_buf, float* up_buf, float* out, int64_t ldo,
               ThreadPool& pool) {
  const int64_t ff = w.gate->rows;
  const kernels::MatmulTarget gate_up[] = {{w.gate, gate_buf, ff}, {w.up, up_buf, ff}};
  SwigluColumns ctx{isa_table(k.isa).swiglu, gate_buf, up_buf, m, ff, &w};
  const kernels::MatmulEpilogue epilogue{swiglu_columns, &ctx};
  k.matmul_group(std::span(gate_up), x, ldx, m, pool, &epilogue);
  k.matmul(*w.down, gate_buf, ff, m, out, ldo, pool);
  if (w.down_bias != nullptr) {
    const int64_t n_out = w.down->rows;
    for (int64_t t = 0; t < m; ++t) {
      for (int64_t j = 0; j < n_out; ++j) out[t * ldo + j] += w.down_bias[j];
    }
  }
}

}  // namespace ridge::backend::cpu
