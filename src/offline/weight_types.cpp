#include "offline/weight_types.h"

#include "offline/quant_mix.h"

namespace ridge::offline {

Result<model::TensorTypeFn> weight_types_by_name(std::string_view name,
                                                 const model::ModelConfig& cfg) {
  if (auto t = ggml_type_from_name(name)) return model::uniform_types(*t);  // both ignore case
  if (auto mix = quant_mix_from_name(name); mix.ok()) {
    return model::types_by_tensor_name(
        [mix = *mix, cfg](std::string_view tensor, uint64_t cols) {
          return standard_tensor_type(mix, cfg, tensor, cols);
        },
        cfg);
  }
  return usage_error("unknown weight type '{}' (a ggml type such as f16, bf16, q8_0, q4_K, iq2_xxs, or a "
                     "llama.cpp mixture such as q4_k_m, q3_k_s, q5_k_m, iq2_m, iq3_xs, iq3_m)", name);
}

}  // namespace ridge::offline
