// The recurrent core of a Gated DeltaNet layer (Qwen3.5's linear attention; equations in
// docs/reference/qwen35.md): the causal depthwise convolution over the in-projection with its
// (K - 1)-row state, and the gated delta rule over a per-head state matrix.
//
// Per value head j (of Hv), with q, k of key head j % Hk (GGUF's tiled head order), g_j <= 0 the
// log-decay, beta_j in (0, 1), and the state S_j a dv x dk matrix (row a: value index a, over the
// key index; llama.cpp's layout):
//   S <- exp(g) S;   u = beta (v - S k);   S <- S + u k^T;   o = S q      (the updated state)
// delta_rule_sequential runs that token by token; delta_rule_chunked computes the same outputs and
// final state chunk by chunk (the WY form: within a chunk the u_i solve one lower-triangular
// system, then outputs and the state come from dot products and one rank-C update), to f32
// rounding.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace ridge::backend::cpu {

// A half-open range of heads or channels; end -1: to the last.
struct IndexRange {
  int64_t begin = 0;
  int64_t end = -1;
};

struct DeltaNetShape {
  int64_t n_k_heads = 0;  // Hk: heads of q and k
  int64_t n_v_heads = 0;  // Hv: heads of v, of the state and of the output (a multiple of Hk)
  int64_t dk = 0;         // key head size
  int64_t dv = 0;         // value head size
  int64_t state_floats() const { return n_v_heads * dv * dk; }
};

// n tokens of one sequence. Rows per token: q, k [Hk * dk] (already L2-normalized), v [Hv * dv],
// g and beta [Hv]; out [Hv * dv], each output times out_scale (1/sqrt(dk) for Qwen3.5: llama.cpp
// scales the output rather than q). state [Hv][dv][dk] is read and updated in place. Only the
// value heads in `heads` are computed (threads split the heads).
void delta_rule_sequential(const DeltaNetShape& s, int64_t n, const float* q, const float* k,
                           const float* v, const float* g, const float* beta, float* state,
                           float* out, float out_scale = 1.0f, IndexRange heads = {});

// The same in AVX-512 / AVX2 lanes (x86_avx512/delta_rule.cpp, x86_avx2/delta_rule.cpp; dot
// products summed in lanes: a few ulps from the scalar order), and the one to use under an ISA.
void delta_rule_avx512(const DeltaNetShape& s, int64_t n, const float* q, const float* k,
                       const float* v, const float* g, const float* beta, float* state, float* out,
                       float out_scale, IndexRange heads);
void delta_rule_avx2(const DeltaNetShape& s, int64_t n, const float* q, const float* k,
                     const float* v, const float* g, const float* beta, float* state, float* out,
                     float out_scale, IndexRange heads);
using DeltaRuleFn = void (*)(const DeltaNetShape& s, int64_t n, const float* q, const float* k,
                             const float* v, const float* g, const float* beta, float* state,
                             float* out, float out_scale, IndexRange heads);

// The same, `chunk` tokens at a time (64 unless given).
void delta_rule_chunked(const DeltaNetShape& s, int64_t n, const float* q, const float* k,
                        const float* v, const float* g, const float* beta, float* state, float* out,
                        float out_scale = 1.0f, int64_t chunk = 64);

// Causal depthwise convolution of n new rows x [n][channels] with kernel w [channels][K] (ggml's
// ssm_conv1d {K, channels}; w[c][K - 1] weighs the current row), after the K - 1 previous rows
// held in state [K - 1][channels] (oldest first; zeros for a new sequence): y[t][c] =
// sum_i X[t + i][c] w[c][i] over X = state rows then x rows, summed oldest first as ggml does
// (Qwen3.5 applies silu to it next). The state becomes the last K - 1 rows of X. Only the
// channels in `range` are computed and updated (threads split them), row by row; y may be x.
void causal_conv1d(const float* x, int64_t n, int64_t channels, const float* w, int64_t K,
                   float* state, float* y, IndexRange range = {});

}  // namespace ridge::backend::cpu
