// The storage types a `--type` name gives a model's tensors, for the cost model and the roofline.
#pragma once

#include <string_view>

#include "base/status.h"
#include "model/config.h"
#include "model/cost.h"

namespace ridge::offline {

// A ggml type ("f16", "q8_0", "q4_K": every matrix in it) or a llama.cpp mixture ("q4_k_m",
// "q5_k_m": each matrix by llama.cpp's per-tensor rule, offline/quant_mix.h; docs/roofline.md).
Result<model::TensorTypeFn> weight_types_by_name(std::string_view name,
                                                 const model::ModelConfig& cfg);

}  // namespace ridge::offline
