// Qwen3.5 checkpoints (Qwen3_5ForCausalLM and Qwen3_5ForConditionalGeneration's text model ->
// qwen35; Qwen3_5MoeForCausalLM and Qwen3_5MoeForConditionalGeneration's -> qwen35moe) in the
// GGUF form llama.cpp's converter writes (conversion/qwen.py, Qwen3NextModel and
// _LinearAttentionVReorderBase; docs/checkpoints.md):
//  - config.json's Gated DeltaNet sizes (linear_*), full_attention_interval (layer_types checked
//    against it), the rope in rope_parameters (partial_rotary_factor, mrope_section), the MTP
//    blocks (mtp_num_hidden_layers, or counted from the mtp.* tensors) as nextn layers;
//  - the linear layers' tensors: A_log stored as -exp(A_log), dt_bias as ssm_dt.bias, conv1d
//    squeezed to [conv_dim, K], and every value-head-indexed tensor (the V rows of in_proj_qkv,
//    in_proj_z, in_proj_a/b, A_log, dt_bias, the V channels of conv1d, out_proj's input columns)
//    from Hugging Face's grouped order (v-head j of k-head j / (Hv/Hk)) to ggml's tiled one
//    (GGUF v-head j reads k-head j % Hk);
//  - every RMSNorm weight stored plus one (Qwen3.5 multiplies by 1 + w) except the linear
//    layers' gated norm; vectors, norms, the conv taps and the routers written as F32, as
//    llama.cpp's converter writes them; the experts per expert or stacked (gate_up_proj);
//  - the vision tower skipped.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "checkpoint/safetensors.h"
#include "gguf/writer.h"

namespace ridge::checkpoint {

struct HfConfig;

bool is_qwen35(const HfConfig& c);
// The Qwen3.5 fields of config.json (the text config's merged over the top level's).
Status parse_qwen35(const nlohmann::json& j, HfConfig& c);
// The GGUF name of a Qwen3.5 checkpoint's tensor (a multimodal one's text model, an MTP block's
// under mtp.*), or an error naming it: the vision tower's, a linear layer's tensor in a
// full-attention layer or the reverse, a layer past the configuration.
Result<std::string> qwen35_tensor_name(const HfConfig& c, const std::string& hf_name);
// The qwen35 metadata and every tensor (convert_checkpoint wrote the common metadata); an error
// naming a missing tensor or one whose shape the configuration contradicts.
Status convert_qwen35(const HfConfig& c, const SafetensorsSet& set, gguf::Writer& w);
// exp as PyTorch's CPU kernels compute it for F32 (SLEEF's expf_u10, their vectorized exp on x86
// and ARM), which llama.cpp's converter applies to A_log: 1 ulp from the correctly rounded value
// for about one value in eleven, so a double exp would not give llama.cpp's bytes.
float torch_expf(float x);

}  // namespace ridge::checkpoint
