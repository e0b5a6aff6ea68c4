// The CPU backend's paged attention: each query token attends to positions 0..pos of its own
// sequence (the last `window` of them in a sliding-window layer; blocks wholly before a tile's
// windows are not read), reading K and V through the sequence's block table (model/batch.h) in
// the cache's stored type (f32, f16, bf16, q8_0: converted in registers, attention_kernels.h).
// GQA: query head h uses KV head h / (n_head / n_head_kv); the query heads of one KV head, and
// up to kAttnTileTokens consecutive tokens of one sequence (prefill), are processed in one pass
// over each K/V block. The result of a token does not depend on the rest of the batch, its
// grouping or the threads.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "model/attention.h"
#include "model/batch.h"

namespace ridge::backend::cpu {

// The CPU attention's arguments: the op, the step's batch, the kernel table whose isa picks the
// attention loops, and per-thread scratch ([n_threads, scratch_per_thread] floats,
// scratch_per_thread at least attention_scratch_floats(...) for the step's longest context).
struct AttentionArgs : model::AttentionOp {
  const model::Batch* batch = nullptr;
  const kernels::Kernels* kernels = nullptr;
  float* scratch = nullptr;
  int64_t scratch_per_thread = 0;
};

// Tokens of one sequence processed together (fewer when a KV head has many query heads).
inline constexpr int64_t kAttnTileTokens = 4;

// Floats of per-thread scratch the attention needs for contexts up to max_context.
int64_t attention_scratch_floats(int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                                 int64_t block_size, int64_t max_context);

void paged_attention(const AttentionArgs& args, ThreadPool& pool);

}  // namespace ridge::backend::cpu
