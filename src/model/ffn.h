// The gated feed-forward block shared by dense layers, each routed expert and the shared expert
// of a mixture-of-experts layer: down · (act(gate · x) * (up · x)), act = silu (SwiGLU) or the
// tanh GELU (GeGLU, gemma): its weights and the activations' exact definitions (the CPU's
// implementation: backend/cpu/gated_ffn.h).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"
#include "tensor/fp16.h"

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
// ggml's table: the tanh GELU of every f16 value, rounded to f16 and widened (65536 floats).
const float* gelu_f16_table();
// geglu through that table.
inline float geglu_with(const float* table, float gate, float up) {
  if (gate <= -10.0f) return 0.0f;
  if (gate >= 10.0f) return gate * up;
  return table[f32_to_fp16(gate)] * up;
}

}  // namespace ridge::model
