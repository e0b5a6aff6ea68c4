// Gemma 4 checkpoints (Gemma4ForCausalLM, and the text model of Gemma4ForConditionalGeneration:
// gemma-4-E2B/E4B, -31B, -26B-A4B) in llama.cpp's GGUF form (architecture `gemma4`), as llama.cpp's
// converter (conversion/gemma.py, Gemma4Model) writes them:
//  - config.json (its text_config): layer_types (sliding_attention / full_attention, written as
//    the bool array sliding_window_pattern), sliding_window, head_dim (the sliding layers') and
//    global_head_dim (the global ones', key_length; key_length_swa the other), num_key_value_heads
//    and num_global_key_value_heads (a per-layer head_count_kv array where the latter is given),
//    rope_parameters' sliding_attention and full_attention rope_theta (freq_base_swa, freq_base),
//    the global layers' "proportional" rope as a rope_freqs tensor (partial_rotary_factor of the
//    pairs rotated, the others held by a divisor of 1e30), num_kv_shared_layers,
//    hidden_size_per_layer_input, use_double_wide_mlp (a per-layer feed_forward_length array, the
//    KV-sharing layers' twice as wide), final_logit_softcapping, and the experts of the MoE form
//    (enable_moe_block: num_experts, top_k_experts, moe_intermediate_size);
//  - the norms as they are (Gemma 4's RMSNorm multiplies by w, not 1 + w), the per-layer
//    embeddings' tensors, layer_scalar, the router (proj, scale, per_expert_scale) and the fused
//    experts ([n_expert, 2 n_ff_exp, n_embd] gate then up, [n_expert, n_embd, n_ff_exp] down)
//    under llama.cpp's names; vectors, norms and the router in F32, matrices in their own type;
//  - the vision and audio towers of a multimodal checkpoint skipped.
// Anything else (an unknown tensor, a rope type other than these, attention soft-capping) is a
// one-line error naming it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/status.h"
#include "checkpoint/safetensors.h"
#include "gguf/writer.h"

namespace ridge::checkpoint {

struct HfConfig;

bool is_gemma4(const HfConfig& c);
// The Gemma 4 fields of config.json (after the common ones; the text config's).
Status parse_gemma4(const nlohmann::json& j, HfConfig& c);
// The GGUF name of a text-model tensor ("model.language_model.layers.3.layer_scalar" ->
// "blk.3.layer_output_scale.weight"), or nullopt (a tower's, an unknown one).
std::optional<std::string> gemma4_tensor_name(const HfConfig& c, const std::string& hf_name);
// Gemma 4's metadata beyond the common keys, its rope_freqs tensor and its tensors.
Status convert_gemma4(const HfConfig& c, const SafetensorsSet& set, gguf::Writer& w);

}  // namespace ridge::checkpoint
