// Weights of a decoder-only transformer, bound by name to the tensors of a GGUF file. Matrices
// are views into the file's bytes (mapped, or read into huge pages: gguf::Backing), never copied
// one by one; only small vectors (norm weights, biases) that are not stored as f32 are converted into owned f32 copies.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kernels/kernels.h"
#include "model/config.h"

namespace ridge::gguf {
class File;
struct TensorInfo;
}

namespace ridge::model {

// A 1-D f32 vector: points into the mapping or into Weights::owned_.
struct VectorView {
  const float* data = nullptr;  // null: absent (optional tensor)
  int64_t n = 0;
  explicit operator bool() const { return data != nullptr; }
};

struct LayerWeights {
  VectorView attn_norm;               // [n_embd]
  kernels::WeightView wq;             // [q_dim rows, n_embd cols] (gated attention: 2 q_dim)
  kernels::WeightView wk;             // [kv_dim, n_embd]
  kernels::WeightView wv;             // [kv_dim, n_embd]
  kernels::WeightView wo;             // [n_embd, q_dim] (a linear layer's ssm_out: [n_embd, Dv])
  VectorView bq, bk, bv;              // [q_dim], [kv_dim], [kv_dim]: qwen2 (optional elsewhere)
  VectorView q_norm, k_norm;          // [head_dim]: qwen3 per-head RMSNorm
  VectorView ffn_norm;                // [n_embd]
  VectorView attn_post_norm;          // [n_embd] gemma3: RMSNorm of the attention output
  VectorView ffn_post_norm;           // [n_embd] gemma3: RMSNorm of the FFN output
  kernels::WeightView w_gate;         // [n_ff, n_embd]  (MoE: the shared expert's, or empty)
  kernels::WeightView w_up;           // [n_ff, n_embd]
  kernels::WeightView w_down;         // [n_embd, n_ff]
  // Mixture of experts (cfg.is_moe()): a router and n_expert expert FFNs, each a slice of one
  // 3-D tensor (ffn_gate_exps [n_expert, n_ff_exp, n_embd], ...).
  kernels::WeightView router;                   // [n_expert, n_embd] (ffn_gate_inp)
  std::vector<kernels::WeightView> exp_gate;    // n_expert x [n_ff_exp, n_embd]
  std::vector<kernels::WeightView> exp_up;      // n_expert x [n_ff_exp, n_embd]
  std::vector<kernels::WeightView> exp_down;    // n_expert x [n_embd, n_ff_exp]
  VectorView shexp_gate;  // [n_embd] qwen2moe: the shared expert is scaled by sigmoid(x . this)
  // gpt-oss: biases of the output projection, the router and the experts, and attention sinks.
  VectorView bo;             // [n_embd]
  VectorView attn_sinks;     // [n_head]
  VectorView router_bias;    // [n_expert]
  VectorView exp_gate_bias;  // [n_expert, n_ff_exp]
  VectorView exp_up_bias;    // [n_expert, n_ff_exp]
  VectorView exp_down_bias;  // [n_expert, n_embd]
  // Gemma 4's experts: gate and up in one stacked tensor (ffn_gate_up_exps: each expert's gate
  // rows, then its up rows; exp_gate/exp_up empty then), the router's input scale, each
  // expert's output scale, and the norms around the two FFN halves.
  std::vector<kernels::WeightView> exp_gate_up;  // n_expert x [2 n_ff_exp, n_embd]
  VectorView router_scale;   // [n_embd] ffn_gate_inp.scale
  VectorView exp_scale;      // [n_expert] ffn_down_exps.scale
  VectorView pre_ffn_norm_2, post_ffn_norm_1, post_ffn_norm_2;  // [n_embd]
  // Qwen3.5's Gated DeltaNet layers (cfg.is_recurrent_layer; no wq/wk/wv there, wo is ssm_out).
  kernels::WeightView ssm_qkv;    // [conv_dim, n_embd] attn_qkv: q | k | v before the conv
  kernels::WeightView ssm_z;      // [Dv, n_embd] attn_gate: the output gate
  kernels::WeightView ssm_beta;   // [Hv, n_embd]
  kernels::WeightView ssm_alpha;  // [Hv, n_embd]
  VectorView ssm_conv;            // [conv_dim, K] ssm_conv1d
  VectorView ssm_dt_bias;         // [Hv]
  VectorView ssm_a;               // [Hv] -exp(A_log)
  VectorView ssm_norm;            // [dv] per-head RMSNorm of the output
  // Gemma 4: the per-layer embedding's gate and projection, the norm of what it adds to the
  // residual stream, and the layer's output scale (one value; absent: 1).
  kernels::WeightView ple_gate;   // [n_embd_per_layer, n_embd] inp_gate
  kernels::WeightView ple_proj;   // [n_embd, n_embd_per_layer] proj
  VectorView ple_post_norm;       // [n_embd] post_norm
  VectorView out_scale;           // [1] layer_output_scale
  float output_scale = 1.0f;      // its value, read at load (an op's parameter, not device data)
};

// The MTP draft head (Qwen3.5's nextn block n_layer, cfg.has_mtp(); model/mtp.cpp): a
// full-attention block fed eh_proj · [RMSNorm(embedding) * enorm, RMSNorm(h) * hnorm], whose
// output normed by head_norm is the h of the next draft and goes through the head.
struct MtpWeights {
  LayerWeights block;
  kernels::WeightView eh_proj;  // [n_embd, 2 n_embd]
  VectorView enorm, hnorm;      // [n_embd]
  VectorView head_norm;         // [n_embd] nextn.shared_head_norm, else output_norm
  kernels::WeightView embed;    // [n_vocab, n_embd] nextn.embed_tokens, else token_embd
  kernels::WeightView head;     // [n_vocab, n_embd] nextn.shared_head_head, else output
  uint64_t matrix_bytes = 0;    // bytes of the matrices one MTP step streams (block, eh_proj, head)
};

// One tensor a step reads, as bound (a matrix in its layout, a vector as f32): what a device
// backend copies into its memory at load (Backend::load_weights).
struct WeightRegion {
  std::string name;
  const void* data = nullptr;
  uint64_t bytes = 0;
  bool derived = false;  // a table the model computed at load (the rope factors), not a tensor
};

struct Weights {
  kernels::WeightView token_embd;     // [n_vocab, n_embd]
  VectorView output_norm;             // [n_embd]
  kernels::WeightView output;         // [n_vocab, n_embd] (token_embd when tied)
  VectorView rope_freqs;              // [rope_dims / 2] frequency divisors (Llama 3), optional
  // Gemma 4's per-layer embeddings (n_embd_per_layer > 0): a token's rows for every layer, the
  // projection of the scaled embedding onto them, and its norm.
  kernels::WeightView ple_token_embd; // [n_vocab, n_layer * n_embd_per_layer]
  kernels::WeightView ple_model_proj; // [n_layer * n_embd_per_layer, n_embd]
  VectorView ple_proj_norm;           // [n_embd_per_layer]
  std::vector<LayerWeights> layers;
  MtpWeights mtp;                     // bound where cfg.has_mtp()
  std::vector<std::vector<float>> owned;  // f32 copies of non-f32 vectors
  uint64_t matrix_bytes = 0;          // bytes of all matrices read per step (output included)
  // Every tensor bound, once each (a tied matrix is one region; stacked experts are one).
  std::vector<WeightRegion> regions;
};

// Looks tensors up by name and checks their shapes and types. Errors name the tensor:
// "missing tensor 'blk.3.attn_q.weight'", "tensor 'output_norm.weight' has shape [32], expected
// [64]", "not supported yet: q4_K in tensor 'blk.0.ffn_up.weight'".
class WeightBinder {
 public:
  // `writable`: the file's bytes when this binder may rewrite them (Backing::kHugePages, a File
  // no one else holds): each matrix is then converted in place into the layout the kernels read
  // fastest (kernels::Kernels::layout_for). Empty: every matrix stays in GGUF's row order.
  WeightBinder(const gguf::File& file, const kernels::Kernels& kernels, Weights& out,
               std::span<uint8_t> writable = {})
      : file_(file), kernels_(kernels), out_(out), writable_(writable) {}

  // A matrix of `rows` x `cols` (ggml shape [cols, rows]) of a type the matmul computes.
  Result<kernels::WeightView> matrix(const std::string& name, int64_t rows, int64_t cols);
  // Same, or an empty view (data == nullptr) when the tensor is absent.
  Result<kernels::WeightView> optional_matrix(const std::string& name, int64_t rows, int64_t cols);
  // A vector of n elements (f32, f16 or bf16), as f32.
  Result<VectorView> vector(const std::string& name, int64_t n);
  Result<VectorView> optional_vector(const std::string& name, int64_t n);
  // A small f32/f16/bf16 table of `rows` rows of `cols` (ggml shape [cols, rows]), row-major.
  Result<VectorView> table(const std::string& name, int64_t rows, int64_t cols);
  bool has(const std::string& name) const;
  // The n matrices of `rows` x `cols` stacked in one 3-D tensor (ggml shape [cols, rows, n]),
  // as one view per matrix.
  Result<std::vector<kernels::WeightView>> stacked_matrices(const std::string& name, int64_t n,
                                                            int64_t rows, int64_t cols);

 private:
  const gguf::File& file_;
  const kernels::Kernels& kernels_;
  Weights& out_;
  Result<VectorView> optional_f32(const std::string& name, std::vector<uint64_t> shape);
  // A view of the matrix at `data` (within tensor t), converted to the kernels' layout when
  // this binder may rewrite the file.
  kernels::WeightView view_of(const gguf::TensorInfo& t, const uint8_t* data, int64_t rows,
                              int64_t cols, uint64_t row_bytes);
  std::span<uint8_t> writable_;
  std::vector<const void*> converted_;  // tensors already converted (a tied matrix is bound twice)
  // Adds a region to out_.regions unless one starts at `data` already.
  void add_region(const std::string& name, const void* data, uint64_t bytes);
};

// The stem of the norm before a layer's FFN: "ffn_norm.weight", gpt-oss's
// "post_attention_norm.weight".
std::string_view ffn_norm_tensor(const ModelConfig& cfg);

// Name of tensor `suffix` ("attn_q.weight") of layer `il`: "blk.<il>.attn_q.weight".
std::string layer_tensor(int64_t il, std::string_view suffix);

// Binds the parts every architecture shares: embeddings, output head (tied when output.weight
// is absent), output norm, and per layer the attention/FFN norms and all projections.
// For a mixture-of-experts config the FFN is bind_experts' instead.
Status bind_common(WeightBinder& b, const ModelConfig& cfg, Weights& w);
// Block il's norms, attention projections and FFN (bind_common's per layer; il = n_layer: the
// MTP block).
Status bind_layer(WeightBinder& b, const ModelConfig& cfg, int64_t il, LayerWeights& l);
// Layer il's router, stacked expert matrices and (n_ff_shexp > 0) gated shared expert.
Status bind_experts(WeightBinder& b, const ModelConfig& cfg, int64_t il, LayerWeights& l);

}  // namespace ridge::model
