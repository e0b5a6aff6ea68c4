#include "model/ffn.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "model/ops.h"
#include "tensor/fp16.h"

namespace ridge::model {
namespace {

// The tanh GELU of every f16 value, rounded to f16 and widened back (ggml's table).
const std::vector<float>& gelu_f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) {
      const float x = fp16_to_f32(static_cast<uint16_t>(h));
      constexpr float kA = 0.044715f, kSqrt2OverPi = 0.79788456080286535587989211986876f;
      const float y = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kA * x * x)));
      t[h] = fp16_to_f32(f32_to_fp16(y));
    }
    return t;
  }();
  return table;
}

// GeGLU of one pair through the table (see geglu).
inline float geglu_with(const float* table, float gate, float up) {
  if (gate <= -10.0f) return 0.0f;
  if (gate >= 10.0f) return gate * up;
  return table[f32_to_fp16(gate)] * up;
}

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
      for (int64_t j = j0; j < j1; ++j) g[j] = swiglu_oai(g[j], u[j]);
    } else if (w.act == FfnActivation::kGeglu) {
      const float* table = gelu_f16_table().data();
      for (int64_t j = j0; j < j1; ++j) g[j] = geglu_with(table, g[j], u[j]);
    } else {
      c.fn(g + j0, u + j0, g + j0, j1 - j0);
    }
  }
}

}  // namespace

float geglu(float gate, float up) { return geglu_with(gelu_f16_table().data(), gate, up); }

float swiglu_oai(float gate, float up) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  const float x = std::min(gate, kLimit);
  const float y = std::clamp(up, -kLimit, kLimit);
  return x / (1.0f + std::exp(kAlpha * -x)) * (y + 1.0f);
}

void gated_ffn(const kernels::Kernels& k, const GatedFfn& w, const float* x, int64_t ldx,
               int64_t m, float* gate_buf, float* up_buf, float* out, int64_t ldo,
               ThreadPool& pool) {
  const int64_t ff = w.gate->rows;
  const kernels::MatmulTarget gate_up[] = {{w.gate, gate_buf, ff}, {w.up, up_buf, ff}};
  SwigluColumns ctx{swiglu_for(k.isa), gate_buf, up_buf, m, ff, &w};
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

}  // namespace ridge::model
