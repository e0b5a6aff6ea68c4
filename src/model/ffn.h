// The gated feed-forward block shared by dense layers, each routed expert and the shared expert
// of a mixture-of-experts layer: down · (act(gate · x) * (up · x)), act = silu (SwiGLU) or the
// tanh GELU (GeGLU, gemma).
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "kernels/kernels.h"

namespace ridge::model {

// The activation between the gate/up matmuls and the down matmul: silu(g) * u; gemma's GeGLU,
// gelu_tanh(g) * u; gpt-oss's clamped SwiGLU, min(g, 7) * sigmoid(1.702 * min(g, 7)) *
// (clamp(u, -7, 7) + 1).
enum class FfnActivation : uint8_t { kSwiglu, kGeglu, kSwigluOai };

struct GatedFfn {
  const kernels::WeightView* gate = nullptr;  // [n_ff, n_in]
  const kernels::WeightView* up = nullptr;    // [n_ff, n_in]
  const kernels::WeightView* down = nullptr;  // [n_out, n_ff]
  // gpt-oss's experts' biases (null: none).
  const float* gate_bias = nullptr;  // [n_ff]
  const float* up_bias = nullptr;    // [n_ff]
  const float* down_bias = nullptr;  // [n_out]
  FfnActivation act = FfnActivation::kSwiglu;
};

// gpt-oss's activation of one gate/up pair (ggml's swiglu_oai with alpha 1.702, limit 7).
float swiglu_oai(float gate, float up);
// GeGLU of one gate/up pair as llama.cpp computes it on CPUs: 0 for gate <= -10, gate * up for
// gate >= 10, else the tanh GELU of gate rounded to f16, itself rounded to f16 (ggml's table),
// times up.
float geglu(float gate, float up);

// out[m, n_out] (leading dimension ldo) from x[m, n_in] (leading dimension ldx). gate_buf and
// up_buf hold m * n_ff floats each. Gate and up run in one parallel region over one conversion
// of x, and each thread applies SwiGLU to the columns it just computed, while they are in cache.
// Every row's result depends on that row alone (batch invariance).
void gated_ffn(const kernels::Kernels& k, const GatedFfn& w, const float* x, int64_t ldx,
               int64_t m, float* gate_buf, float* up_buf, float* out, int64_t ldo,
               ThreadPool& pool);

}  // namespace ridge::model
