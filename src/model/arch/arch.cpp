#include "model/arch.h"

namespace ridge::model {

Result<const Architecture*> find_architecture(std::string_view name) {
  for (const Architecture* a :
       {&llama_architecture(), &qwen2_architecture(), &qwen3_architecture(),
        &qwen2moe_architecture(), &qwen3moe_architecture(), &gpt_oss_architecture(),
        &gemma2_architecture(), &gemma3_architecture(), &gemma4_architecture(),
        &qwen35_architecture(),
        &qwen35moe_architecture()}) {
    if (a->name == name) return a;
  }
  return error("not supported yet: architecture '{}' (supported: llama, qwen2, qwen3, qwen2moe, "
               "qwen3moe, gpt-oss, gemma2, gemma3, gemma4, qwen35, qwen35moe)", name);
}

}  // namespace ridge::model
