// Gemma 2 and Gemma 3 checkpoints (Gemma2ForCausalLM, Gemma3ForCausalLM, and the text model of
// Gemma3ForConditionalGeneration) in llama.cpp's GGUF form:
//  - config.json's sliding window, its layer period (Gemma 3) and rope base (rope_local_base_freq),
//    the soft-caps, checked query_pre_attn_scalar;
//  - the four norms of a layer under llama.cpp's names (post_attention_norm, ffn_norm,
//    post_ffw_norm) and every RMSNorm weight stored plus one, as llama.cpp's converter stores
//    them (Gemma's RMSNorm multiplies by 1 + w): computed in the checkpoint's precision and
//    rounded to it, as torch does, then widened to F32;
//  - the text model's tensors of a multimodal checkpoint, its vision tower skipped.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "checkpoint/safetensors.h"
#include "gguf/writer.h"

namespace ridge::checkpoint {

struct HfConfig;

bool is_gemma(const HfConfig& c);
// The Gemma fields of config.json (the text config's, for a multimodal one).
Status parse_gemma(const nlohmann::json& j, HfConfig& c);
// The metadata llama.cpp's converter writes for them (and what ridge reads beyond it).
void add_gemma_metadata(const HfConfig& c, gguf::Writer& w);
// A Hugging Face tensor name of a multimodal checkpoint as the text model's ("language_model.
// model.x" and "model.language_model.x" -> "model.x"); nullopt for the vision tower's and the
// projector's, which convert skips.
std::optional<std::string> gemma_text_name(const std::string& hf_name);
// The GGUF name of a layer tensor Gemma names differently ("post_attention_layernorm.weight"
// ...), or nullopt.
std::optional<std::string> gemma_layer_tensor(const std::string& rest);
// An RMSNorm weight plus one, as F32 values.
Result<std::vector<float>> gemma_shifted_norm(const Tensor& t);

}  // namespace ridge::checkpoint
