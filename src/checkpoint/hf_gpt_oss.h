// gpt-oss checkpoints (GptOssForCausalLM: openai/gpt-oss-20b, -120b) in llama.cpp's GGUF form
// (architecture `gpt-oss`), as llama.cpp's converter (conversion/gpt_oss.py) writes them:
//  - config.json: num_local_experts, num_experts_per_tok (or experts_per_token), intermediate_size
//    (each expert's width, also written as feed_forward_length), sliding_window on the even layers
//    (layer_types, where given, must be that pattern), swiglu_limit 7 (the runtime's constant),
//    YaRN's factor / original_max_position_embeddings / beta_fast / beta_slow;
//  - the experts in OpenAI's MXFP4 packing (`*_blocks` U8 [n_expert, rows, cols / 32, 16] and
//    `*_scales` U8 [n_expert, rows, cols / 32]) repacked into ggml's MXFP4 blocks (the scale byte,
//    then 16 bytes whose low nibbles are values 0..15 and high nibbles 16..31; OpenAI's byte j
//    holds values 2j (low) and 2j + 1 (high)), gate_up_proj's interleaved rows (even: gate, odd:
//    up) split into ffn_gate_exps and ffn_up_exps, its bias likewise;
//  - the experts dequantized (`mlp.experts.gate_up_proj` [n_expert, n_embd, 2 n_ff] and
//    `down_proj` [n_expert, n_ff, n_embd], as transformers saves a bf16 copy) transposed and split,
//    in their own type;
//  - vectors, norms, biases, sinks and the router in F32 (a BF16 or F16 checkpoint's widened),
//    the other matrices in their own type.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "base/status.h"
#include "checkpoint/safetensors.h"
#include "gguf/writer.h"

namespace ridge::checkpoint {

struct HfConfig;

bool is_gpt_oss(const HfConfig& c);
// The gpt-oss fields of config.json (after the common ones).
Status parse_gpt_oss(const nlohmann::json& j, HfConfig& c);
// The tensors of a gpt-oss checkpoint (the metadata is convert_checkpoint's).
Status convert_gpt_oss(const HfConfig& c, const SafetensorsSet& set, gguf::Writer& w);

// One block of 32 values: OpenAI's 16 bytes and scale as ggml's 17-byte MXFP4 block.
void mxfp4_block_from_openai(uint8_t scale, const uint8_t* openai16, uint8_t* ggml17);

}  // namespace ridge::checkpoint
