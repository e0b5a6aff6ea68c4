// Gemma 4's metadata (config_from_gguf's part for `gemma4`): a per-layer sliding-window pattern,
// per-layer FFN widths and KV heads, the sliding-window layers' own head size and rope, KV
// sharing and per-layer embeddings.
#pragma once

#include "base/status.h"
#include "model/config.h"

namespace ridge::gguf {
class File;
}

namespace ridge::model {

// Before the shared checks: the sliding-window pattern, `feed_forward_length` and
// `attention.head_count_kv` (each a scalar or one value per layer). Needs n_layer and n_head.
Status read_gemma4_layer_arrays(const gguf::File& f, ModelConfig& c);
// After them: window, sliding-window head size / rope, KV sharing, per-layer embeddings.
Status read_gemma4(const gguf::File& f, ModelConfig& c);

}  // namespace ridge::model
