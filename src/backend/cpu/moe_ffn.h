// The mixture-of-experts FFN (qwen2moe, qwen3moe): a router picks n_expert_used of n_expert
// expert FFNs per token; the tokens of a step are grouped by expert so that each selected
// expert's weights stream once for all its tokens, never once per token.
//
// Batch invariance: a token's routing, each expert's output row (the matmul kernels give every
// row the same bits whatever the number of rows) and the weighted sum over its experts (in the
// order of their weights, as llama.cpp adds them) depend on that token alone, so its result is
// bit-identical alone or in any batch.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "model/config.h"
#include "model/ffn.h"
#include "model/weights.h"
#include "model/workspace.h"

namespace ridge::backend::cpu {

// out[m, n_embd] = the MoE FFN (shared expert included) of xn[m, n_embd] (ws.xn), for layer l
// (gemma4: routed from the residual ws.x, config.h moe_gemma4).
// Uses ws.moe, ws.gate and ws.up; records how many experts it ran in ws.moe.experts_run[il].
void moe_ffn(const model::ModelConfig& cfg, const model::LayerWeights& l, int64_t il, const kernels::Kernels& k,
             int64_t m, model::Workspace& ws, float* out, ThreadPool& pool);

// Routed expert e's FFN as moe_ffn runs it (not gemma4's fused gate|up, l.exp_gate_up): its
// gate/up/down slices, gpt-oss's biases and clamped SwiGLU, gemma4's GeGLU.
model::GatedFfn routed_expert_ffn(const model::ModelConfig& cfg, const model::LayerWeights& l, int64_t e);

// Routing of one token: picks the k largest of probs (n_expert softmax probabilities, or raw
// logits with cfg.moe_softmax_after_topk) in descending order (ties: lower expert id first)
// into expert[0, k) and their weights (a softmax over the k picked logits with
// moe_softmax_after_topk; divided by their sum with moe_norm_topk; then times
// cfg.expert_weights_scale) into weight[0, k).
void route_token(const model::ModelConfig& cfg, const float* probs, int32_t* expert, float* weight);

}  // namespace ridge::backend::cpu
