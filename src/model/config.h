// Hyper-parameters of a decoder-only transformer (Llama, Qwen2, Qwen3 families and their
// mixture-of-experts forms), read from GGUF metadata or taken from a named preset with the exact
// shape of a real checkpoint.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ridge::gguf {
class File;
}

namespace ridge::model {

enum class RopeLayout {
  kNormal,  // adjacent pairs (x[2i], x[2i+1]): llama / llama2.c
  kNeox,    // halves (x[i], x[i + d/2]): qwen2, qwen3
};

struct RopeScaling {  // Llama 3 style frequency scaling; factor 0 = none
  float factor = 0.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int64_t original_context = 8192;
};

// YaRN (gpt-oss, long-context Qwen GGUFs): rotary frequencies interpolated by `factor` below
// the correction range, kept above it, blended in between, and cos/sin scaled by a magnitude
// factor, as ggml's rope computes them. factor 0 = none.
struct YarnScaling {
  float factor = 0.0f;             // rope.scaling.factor
  int64_t original_context = 0;    // rope.scaling.original_context_length (default: context_length)
  float beta_fast = 32.0f;         // correction range: rotations per original context
  float beta_slow = 1.0f;
  float attn_factor = 1.0f;        // rope.scaling.attn_factor
  float log_multiplier = 0.0f;     // rope.scaling.yarn_log_multiplier (DeepSeek-style mscale)
};

// How an embedding model turns a sequence's hidden states into one vector (GGUF
// `<arch>.pooling_type`, llama.cpp's numbering: 0 none, 1 mean, 2 cls, 3 last, 4 rank).
enum class Pooling { kNone, kMean, kCls, kLast, kRank };
std::string_view pooling_name(Pooling p);  // "none", "mean", "cls", "last", "rank"

struct ModelConfig {
  std::string arch;          // "llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "gpt-oss", "gemma2",
                             // "gemma3", "gemma4", "qwen35", "qwen35moe"
  std::string name;          // general.name or preset name
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;      // key/value length per head
  int64_t n_ff = 0;
  int64_t n_ctx_train = 0;
  float rms_eps = 1e-6f;
  float rope_theta = 10000.0f;
  int64_t rope_dims = 0;     // rotated dimensions per head (usually head_dim)
  RopeLayout rope_layout = RopeLayout::kNormal;
  RopeScaling rope_scaling;
  float rope_freq_scale = 1.0f;  // linear or YaRN scaling: positions multiplied by this (1/factor)
  YarnScaling yarn;
  bool tied_embeddings = false;  // output head reuses token_embd
  bool qkv_bias = false;         // qwen2
  bool qk_norm = false;          // qwen3: per-head RMSNorm on Q and K
  Pooling pooling = Pooling::kNone;  // embedding models: from `<arch>.pooling_type`
  // Mixture of experts (qwen2moe, qwen3moe): every layer's FFN is n_expert expert FFNs of
  // n_ff_exp rows, of which a router picks n_expert_used per token; 0 experts = a dense FFN of n_ff.
  int64_t n_expert = 0;        // `<arch>.expert_count`
  int64_t n_expert_used = 0;   // `<arch>.expert_used_count` (top-k)
  int64_t n_ff_exp = 0;        // `<arch>.expert_feed_forward_length`
  int64_t n_ff_shexp = 0;      // rows of the shared expert (qwen2moe), 0 = none
  bool moe_norm_topk = false;  // selected weights renormalized to sum 1 (qwen3moe)
  float expert_weights_scale = 1.0f;  // `<arch>.expert_weights_scale` (0 in a file means 1)

  // gpt-oss's router and experts: top-k of the raw (biased) router logits, their weights a
  // softmax over the k picked; experts with biases and the clamped SwiGLU (alpha 1.702, limit 7).
  bool moe_softmax_after_topk = false;
  bool moe_swiglu_oai = false;
  // Gemma 4's mixture of experts (26B-A4B): beside the layer's dense FFN (ffn_norm in,
  // post_ffw_norm_1 out), GeGLU experts fed by pre_ffw_norm_2 and routed from the RMS-normed
  // residual times 1/sqrt(n_embd) and ffn_gate_inp.scale, each expert's output times its own
  // scale (ffn_down_exps.scale), the sum post_ffw_norm_2-normed; both halves added, then
  // post_ffw_norm as in every Gemma layer.
  bool moe_gemma4 = false;
  // Sliding-window attention (gpt-oss, gemma3): layer il attends to its last n_swa positions when
  // il % swa_period < swa_period - 1 (every layer when swa_period is 0), as llama.cpp decides.
  int64_t n_swa = 0;
  int64_t swa_period = 0;
  bool attn_sinks = false;  // one learned logit per head in each attention softmax (gpt-oss)
  // Sliding-window layers' rope (0: the model's): gemma3 gives them a base of their own
  // (`rope.freq_base_swa`) and never scales their positions.
  float rope_theta_swa = 0.0f;
  float rope_freq_scale_swa = 0.0f;

  // Gemma (gemma2, gemma3): token embeddings scaled by sqrt(n_embd); a GeGLU FFN (the tanh GELU of the
  // gate times up); RMSNorm on the attention output and on the FFN output before each residual
  // add (post_attention_norm, post_ffw_norm); logits soft-capped where the file gives a cap.
  bool scale_embeddings = false;
  bool ffn_gelu = false;
  bool post_norms = false;
  float final_logit_softcap = 0.0f;  // logits = cap * tanh(logits / cap); 0 = none
  float attn_softcap = 0.0f;         // gemma2: attention scores soft-capped the same way

  // Qwen3.5 (qwen35, qwen35moe): Gated DeltaNet layers (linear attention over a recurrent state,
  // backend/cpu/delta_net.h) with full attention on every full_attn_interval-th layer (il + 1 a
  // multiple of it); the attention output is gated (attn_q holds each head's q, then its gate).
  // full_attn_interval 0: every layer is full attention.
  int64_t full_attn_interval = 0;
  int64_t ssm_conv_kernel = 0;   // K: taps of the causal convolution (`ssm.conv_kernel`)
  int64_t ssm_head_dim = 0;      // dk = dv: key and value size of a linear head (`ssm.state_size`)
  int64_t ssm_n_k_heads = 0;     // Hk: q and k heads (`ssm.group_count`)
  int64_t ssm_n_v_heads = 0;     // Hv: v heads and states, a multiple of Hk (`ssm.time_step_rank`)
  bool attn_output_gate = false;  // full attention output times sigmoid(gate)
  // MTP (multi-token prediction) blocks stored after the n_layer trunk blocks: block n_layer is
  // a full-attention block that drafts the token after next (model/mtp.h).
  int64_t n_nextn_layers = 0;

  // Gemma 4 (gemma4): sliding-window and global layers of different shapes, named per layer;
  // the last n_kv_shared_layers layers attend to the KV of the last earlier layer of their kind
  // instead of keeping their own; per-layer embeddings (n_embd_per_layer wide) join the residual
  // stream after each layer's FFN; V is RMS-normed per head without a weight; q·k is unscaled
  // (q and k are normed); rope_freqs apply to the global layers only.
  std::vector<uint8_t> swa_layers;  // 1: layer il is sliding-window (empty: n_swa/swa_period)
  int64_t head_dim_swa = 0;         // sliding-window layers' key/value length (0: head_dim)
  int64_t n_head_kv_swa = 0;        // their KV heads (0: n_head_kv)
  int64_t rope_dims_swa = 0;        // their rotated dimensions (0: rope_dims)
  std::vector<int64_t> n_ff_layers; // FFN rows of each layer where they differ (empty: n_ff)
  int64_t n_kv_shared_layers = 0;
  int64_t n_embd_per_layer = 0;
  bool v_norm = false;
  bool rope_freqs_global_only = false;

  bool is_moe() const { return n_expert > 0; }
  bool is_swa_layer(int64_t il) const {
    if (!swa_layers.empty()) return swa_layers[static_cast<size_t>(il)] != 0;
    return n_swa > 0 && (swa_period == 0 || il % swa_period < swa_period - 1);
  }
  // Layer il's attention shape and FFN width (the model's own where no per-layer value differs).
  int64_t layer_head_dim(int64_t il) const {
    return head_dim_swa > 0 && is_swa_layer(il) ? head_dim_swa : head_dim;
  }
  int64_t layer_n_head_kv(int64_t il) const {
    return n_head_kv_swa > 0 && is_swa_layer(il) ? n_head_kv_swa : n_head_kv;
  }
  int64_t layer_rope_dims(int64_t il) const {
    return rope_dims_swa > 0 && is_swa_layer(il) ? rope_dims_swa : rope_dims;
  }
  int64_t layer_q_dim(int64_t il) const { return n_head * layer_head_dim(il); }
  int64_t layer_kv_dim(int64_t il) const { return layer_n_head_kv(il) * layer_head_dim(il); }
  int64_t layer_n_ff(int64_t il) const {
    return n_ff_layers.empty() ? n_ff : n_ff_layers[static_cast<size_t>(il)];
  }
  // The widest of each over the layers (buffer sizes).
  int64_t max_q_dim() const;
  int64_t max_kv_dim() const;
  int64_t max_n_ff() const;
  // The rotated dimensions of the sliding-window layers' table.
  int64_t swa_rope_dims() const { return rope_dims_swa > 0 ? rope_dims_swa : rope_dims; }
  // Whether layer il writes K/V of its own (not a linear layer, not a KV-sharing one).
  bool has_own_kv(int64_t il) const {
    return !is_recurrent_layer(il) && (il < n_layer - n_kv_shared_layers || is_mtp_layer(il));
  }
  int64_t n_swa_layers() const {
    int64_t n = 0;
    for (int64_t il = 0; il < n_layer; ++il) n += is_swa_layer(il) ? 1 : 0;
    return n;
  }

  // Linear-attention (recurrent) layers and the rest, which keep KV (cache layer kv_layer(il)).
  bool is_recurrent_layer(int64_t il) const {
    return full_attn_interval > 0 && il < n_layer && (il + 1) % full_attn_interval != 0;
  }
  // Block n_layer (the first MTP block) is run by the MTP draft head, never by the trunk.
  bool has_mtp() const { return n_nextn_layers > 0; }
  bool is_mtp_layer(int64_t il) const { return il >= n_layer; }
  bool is_hybrid() const { return full_attn_interval > 0; }
  int64_t n_recurrent_layers() const;
  int64_t n_kv_layers() const { return n_layer - n_recurrent_layers() - n_kv_shared_layers; }
  // The KV layer attention layer il reads: its own (its index among the layers that keep KV),
  // or for a KV-sharing layer that of the last earlier layer of its kind.
  int64_t kv_layer(int64_t il) const;
  int64_t recurrent_layer(int64_t il) const;  // index of linear layer il among the recurrent ones
  int64_t ssm_value_dim() const { return ssm_n_v_heads * ssm_head_dim; }  // Dv: width of z and o
  int64_t ssm_key_dim() const { return ssm_n_k_heads * ssm_head_dim; }
  int64_t ssm_conv_dim() const { return 2 * ssm_key_dim() + ssm_value_dim(); }  // q | k | v
  // f32 values of one sequence's state in one linear layer: the conv's K - 1 rows, then the
  // delta rule's Hv matrices of dv x dk.
  int64_t ssm_conv_state_floats() const { return (ssm_conv_kernel - 1) * ssm_conv_dim(); }
  int64_t ssm_state_floats() const {
    return ssm_conv_state_floats() + ssm_n_v_heads * ssm_head_dim * ssm_head_dim;
  }

  // The rope base and position scale of the sliding-window layers.
  float swa_rope_theta() const { return rope_theta_swa > 0.0f ? rope_theta_swa : rope_theta; }
  float swa_rope_freq_scale() const { return rope_freq_scale_swa > 0.0f ? rope_freq_scale_swa : rope_freq_scale; }
  // Whether sliding-window layers rotate differently from the others (two cos/sin tables).
  bool swa_rope_differs() const {
    return n_swa > 0 && (swa_rope_theta() != rope_theta || swa_rope_freq_scale() != rope_freq_scale ||
                         swa_rope_dims() != rope_dims || rope_freqs_global_only);
  }
  // The q·k scale: 1/sqrt(head_dim), except for the 27B Gemmas (gemma3 with 62 layers, gemma2
  // with 46), whose queries are scaled by 1/sqrt(n_embd / n_head) as llama.cpp decides it (by the
  // layer count), and gemma4 (1: its q and k are RMS-normed).
  float attention_scale() const;

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
};

// Whether an architecture's FFN is a mixture of experts (qwen2moe, qwen3moe, gpt-oss, qwen35moe).
bool is_moe_arch(std::string_view arch);

// Whether 4 rope sections (`rope.dimension_sections`, interleaved M-RoPE) give every one of the
// rope_dims / 2 rotated pairs a text position, so that for text they rotate as NeoX rope does.
Status check_text_rope_sections(const std::vector<int64_t>& sections, int64_t rope_dims);

// Architecture defaults (rope layout, biases, qk-norm) for a known architecture name.
Status apply_arch_defaults(ModelConfig& cfg);

// Reads the config from GGUF metadata (`<arch>.embedding_length`, ...).
Result<ModelConfig> config_from_gguf(const gguf::File& file);

}  // namespace ridge::model
