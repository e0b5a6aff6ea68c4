#include "offline/weight_types.h"

#include <cctype>
#include <string>

#include "offline/quant_mix.h"

namespace ridge::offline {

Result<model::TensorTypeFn> weight_types_by_name(std::string_view name,
                                                 const model::ModelConfig& cfg) {
  std::string n(name);
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (auto t = ggml_type_from_name(n)) return model::uniform_types(*t);
  if (auto mix = quant_mix_from_name(n); mix.ok()) {
    return model::types_by_tensor_name(
        [mix = *mix, cfg](std::string_view tensor, uint64_t cols) {
          return standard_tensor_type(mix, cfg, tensor, cols);
        },
        cfg);
  }
  return usage_error("unknown weight type '{}' (a ggml type such as f16, bf16, q8_0, q4_K, or a "
                     "llama.cpp mixture such as q4_k_m, q3_k_s, q5_k_m)", name);
}

}  // namespace ridge::offline
