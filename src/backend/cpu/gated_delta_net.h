// Qwen3.5's Gated DeltaNet layer in the forward pass (equations: docs/reference/qwen35.md §4),
// and the per-step bookkeeping of the recurrent state it keeps per sequence
// (kv::RecurrentState). Every sequence's rows run token by token through the conv and the delta
// rule, in position order: a sequence's outputs are the same bits whether its tokens come in one
// step or many, alone or batched.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "kv/recurrent_state.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/weights.h"
#include "model/workspace.h"

namespace ridge::backend::cpu {

// Before the layers: zeroes the slots of sequences that start at position 0, and finds each
// sequence's rows once for every layer of the step (ws.lin.rows).
void begin_recurrent_step(const model::Batch& batch, kv::RecurrentState& states, model::Workspace& ws);
// After them: records the positions each slot has consumed.
void end_recurrent_step(const model::Batch& batch, kv::RecurrentState& states);

// Linear layer il on every row: from the normed input ws.xn [n, n_embd] to the normed, gated
// output ws.attn [n, Dv] (the layer's wo, ssm_out, projects it), updating the sequences' states.
void gated_delta_net(const model::ModelConfig& cfg, const model::LayerWeights& l, int64_t il,
                     const kernels::Kernels& kernels, const model::Batch& batch,
                     kv::RecurrentState& states, model::Workspace& ws, ThreadPool& pool);

}  // namespace ridge::backend::cpu
