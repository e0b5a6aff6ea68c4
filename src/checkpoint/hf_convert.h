// A Hugging Face checkpoint folder (config.json + safetensors) as a GGUF file in llama.cpp's
// layout: the architecture's metadata from config.json, each tensor under its GGUF name, in its
// own type (F32, F16 or BF16), the query/key rows of llama-style models reordered as llama.cpp's
// converter does (its rotary embedding pairs adjacent values; Hugging Face's pairs halves).
//
// Architectures: LlamaForCausalLM (llama, with Llama 3's rope scaling as a rope_freqs tensor),
// Qwen2ForCausalLM (qwen2), Qwen3ForCausalLM (qwen3), Gemma2ForCausalLM (gemma2),
// Gemma3ForCausalLM and Gemma3ForConditionalGeneration's text model (gemma3: hf_gemma.h), Qwen3.5
// and Qwen3.5-MoE (qwen35, qwen35moe: Gated DeltaNet layers among full-attention ones, hf_qwen35.h),
// and the mixtures of experts
// Qwen3MoeForCausalLM (qwen3moe) and Qwen2MoeForCausalLM (qwen2moe, with its shared expert): each
// layer's experts stacked into one tensor per kind (hf_experts.h); GptOssForCausalLM (gpt-oss: its
// MXFP4 experts repacked into ggml's blocks, hf_gpt_oss.h); Gemma4ForCausalLM and
// Gemma4ForConditionalGeneration's text model (gemma4, dense or with experts: hf_gemma4.h).
// Anything else, a tensor the architecture does not name, a missing tensor or a dtype other than
// F32/F16/BF16 (U8 for gpt-oss's MXFP4 parts) is a one-line error naming it. The tokenizer is not converted by this slice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "checkpoint/safetensors.h"
#include "gguf/writer.h"

namespace ridge::checkpoint {

// The hyper-parameters convert reads from config.json.
struct HfConfig {
  std::string hf_architecture;  // architectures[0]
  std::string gguf_arch;        // llama, qwen2, qwen3, ...
  // n_ff 0: none given (a qwen35moe checkpoint need not state a dense FFN width).
  int64_t n_embd = 0, n_ff = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0;
  int64_t n_vocab = 0, n_ctx = 0;
  double rope_theta = 10000.0, rms_eps = 1e-6;
  bool tied_embeddings = false;
  std::string rope_scaling_type;  // "" (none), "linear", "yarn", "llama3"
  double rope_scaling_factor = 0.0;
  int64_t rope_original_context = 0;
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  double yarn_beta_fast = 0.0, yarn_beta_slow = 0.0;     // yarn (0: not given)
  // Mixtures of experts (0: dense): experts, experts per token, each expert's FFN width, the
  // shared expert's (qwen2moe).
  int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0, n_ff_shexp = 0;
  // Gemma (hf_gemma.h): the sliding window, its layer period and rope base, the soft-caps.
  int64_t n_swa = 0, swa_period = 0;
  double rope_theta_swa = 0.0, final_softcap = 0.0, attn_softcap = 0.0;
  // Qwen3.5 (hf_qwen35.h): the linear-attention layers' conv kernel, key and value heads and
  // their size (keys and values alike), the period of the full-attention layers, the rotated
  // dimensions and their M-RoPE sections, the MTP blocks after the trunk.
  int64_t ssm_conv_kernel = 0, ssm_n_k_heads = 0, ssm_n_v_heads = 0, ssm_head_dim = 0;
  int64_t full_attn_interval = 0, rope_dims = 0, n_mtp = 0;
  std::vector<int64_t> rope_sections;
  // Gemma 4 (hf_gemma4.h): each layer's kind (1: sliding window), the sliding layers' head size
  // (head_dim is the global layers'), the global layers' KV heads (0: num_key_value_heads for
  // all), the layers reading another's KV, the per-layer embeddings' width, double-wide FFNs on
  // the sharing layers, the fraction of the global layers' rotary pairs that rotate.
  std::vector<uint8_t> swa_layers;
  int64_t head_dim_swa = 0, n_head_kv_global = 0, n_kv_shared = 0, n_embd_per_layer = 0;
  bool double_wide_ffn = false;
  double rope_fraction = 0.0;
};

// A safetensors dtype as the GGUF type convert writes (F32, F16, BF16), or an error naming it.
Result<GgmlType> gguf_type_of(const Tensor& t);

// Llama 3's frequency factors (the rope_freqs tensor llama.cpp's converter adds for rope scaling
// "llama3"): per rotary pair, 1 for short wavelengths, the factor for long ones, blended between.
std::vector<float> llama3_rope_factors(const HfConfig& cfg);

// Parses config.json's text; errors name the field.
Result<HfConfig> parse_hf_config(const std::string& text);

// The GGUF name of a Hugging Face tensor of `cfg`'s architecture ("model.layers.3.self_attn.
// q_proj.weight" -> "blk.3.attn_q.weight"), or an error naming it.
Result<std::string> gguf_tensor_name(const HfConfig& cfg, const std::string& hf_name);

// Rows of a [n_head * head_dim, cols] query or key matrix (or bias, cols 1) from Hugging Face's
// order to llama.cpp's (within each head, row j * head_dim / 2 + i goes to 2 i + j).
std::vector<uint8_t> permute_rope_rows(std::span<const uint8_t> data, int64_t n_head, int64_t head_dim,
                                       int64_t row_bytes);

// Adds the folder's metadata and tensors to `out` (the tensors' bytes are read from the
// checkpoint's mapping when `out` is written: `set` must outlive that).
Status convert_checkpoint(const HfConfig& cfg, const SafetensorsSet& set, gguf::Writer& out);

}  // namespace ridge::checkpoint
