// The attention op a layer asks its backend for (Backend::attention). Paged attention: each
// query token attends to positions 0..pos of its own sequence (the last `window` of them in a
// sliding-window layer), reading K and V through the sequence's block table (model/batch.h);
// GQA: query head h uses KV head h / (n_head / n_head_kv). The result of a token does not depend
// on the rest of the batch, its grouping or the threads. The CPU's: backend/cpu/paged_attention.h.
#pragma once

#include <cstdint>

#include "kv/kv_cache.h"

namespace ridge::model {

// One layer's paged attention over a step's rows, as the model asks a backend for it
// (Backend::attention): the step's rows, positions and block tables are the backend's from
// begin_step.
struct AttentionOp {
  const float* q = nullptr;   // [n_tokens, n_head * head_dim], rope applied
  float* out = nullptr;       // [n_tokens, n_head * head_dim]
  const kv::KvCache* cache = nullptr;
  int64_t layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;         // usually 1 / sqrt(head_dim)
  int64_t window = 0;         // sliding window: a query at position p sees p - window + 1 .. p (0: all)
  const float* sinks = nullptr;  // [n_head] attention sinks (gpt-oss): one more logit per head
                                 // in each softmax's denominator, attached to no value
  float softcap = 0.0f;          // gemma2: scores = cap * tanh(scores / cap) before the softmax
};

}  // namespace ridge::model
