#include "model/ffn.h"

#include <span>

#include "model/ops.h"

namespace ridge::model {
namespace {

// Columns [j0, j1) of gate: [m, n_ff] become silu(gate) * up (a matmul_group epilogue).
struct SwigluColumns {
  SwigluFn fn;
  float* gate;
  const float* up;
  int64_t m, n_ff;
};
void swiglu_columns(void* ctx, int64_t j0, int64_t j1) {
  const auto& c = *static_cast<const SwigluColumns*>(ctx);
  for (int64_t t = 0; t < c.m; ++t) {
    float* g = c.gate + t * c.n_ff + j0;
    c.fn(g, c.up + t * c.n_ff + j0, g, j1 - j0);
  }
}

}  // namespace

void gated_ffn(const kernels::Kernels& k, const GatedFfn& w, const float* x, int64_t ldx,
               int64_t m, float* gate_buf, float* up_buf, float* out, int64_t ldo,
               ThreadPool& pool) {
  const int64_t ff = w.gate->rows;
  const kernels::MatmulTarget gate_up[] = {{w.gate, gate_buf, ff}, {w.up, up_buf, ff}};
  SwigluColumns ctx{swiglu_for(k.isa), gate_buf, up_buf, m, ff};
  const kernels::MatmulEpilogue epilogue{swiglu_columns, &ctx};
  k.matmul_group(std::span(gate_up), x, ldx, m, pool, &epilogue);
  k.matmul(*w.down, gate_buf, ff, m, out, ldo, pool);
}

}  // namespace ridge::model
