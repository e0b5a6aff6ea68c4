// Byte and FLOP accounting of a decoder-only transformer: one cost model for the predicted
// ceilings of `ridge roofline` and the measured fractions of `ridge run` / `ridge bench`.
//
// Conventions (docs/roofline.md has the full derivation):
// - A decode step streams every layer matrix and the output head once, whatever the batch size;
//   the token embedding is a lookup (one row per token). Norms and biases are read once.
// - Attention at context c (tokens attended, the new one included) reads c K rows and c V rows
//   per sequence and layer, and writes one K and one V row per new token.
// - FLOPs: 2 per weight element applied to a token (multiply + add), plus attention:
//   4 * n_layer * q_dim per attended position (QK^T and PV, 2 FLOPs each per q element).
// - Bytes are "ideal": each byte moves once per step (no re-reads from cache misses).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "model/config.h"
#include "tensor/ggml_type.h"

namespace ridge::gguf {
class File;
}

namespace ridge::model {

// Every weight tensor of the supported architectures, by its GGUF name stem.
enum class TensorRole {
  kTokenEmbd,   // token_embd     [n_vocab, n_embd]
  kOutput,      // output         [n_vocab, n_embd] (absent when tied)
  kOutputNorm,  // output_norm    [n_embd]
  kAttnNorm,    // blk.N.attn_norm
  kAttnQ,       // blk.N.attn_q   [q_dim, n_embd]
  kAttnK,       // blk.N.attn_k   [kv_dim, n_embd]
  kAttnV,       // blk.N.attn_v   [kv_dim, n_embd]
  kAttnO,       // blk.N.attn_output [n_embd, q_dim]
  kAttnQNorm,   // blk.N.attn_q_norm [head_dim] (qwen3)
  kAttnKNorm,   // blk.N.attn_k_norm [head_dim] (qwen3)
  kAttnQBias,   // blk.N.attn_q.bias [q_dim] (qwen2)
  kAttnKBias,   // blk.N.attn_k.bias [kv_dim]
  kAttnVBias,   // blk.N.attn_v.bias [kv_dim]
  kFfnNorm,     // blk.N.ffn_norm
  kFfnGate,     // blk.N.ffn_gate [n_ff, n_embd]
  kFfnUp,       // blk.N.ffn_up   [n_ff, n_embd]
  kFfnDown,     // blk.N.ffn_down [n_embd, n_ff]
};
std::string_view tensor_role_name(TensorRole role);

// Storage type of the tensor with `role` in layer `layer` (-1 for tensors outside the layers).
using TensorTypeFn = std::function<GgmlType(TensorRole role, int64_t layer)>;

// Every matrix in `type`, norms and biases in f32 (as GGUF files store them).
TensorTypeFn uniform_types(GgmlType type);
// A type name as `--type` takes it: a ggml type ("f16", "q8_0", "q4_K") or a llama.cpp mixture
// ("q4_k_m", "q5_k_m") approximated with llama.cpp's per-tensor rule (see docs/roofline.md).
Result<TensorTypeFn> weight_types_by_name(std::string_view name, const ModelConfig& cfg);
// The types of a real file's tensor table. A missing output head means tied embeddings.
Result<TensorTypeFn> weight_types_from_gguf(const gguf::File& file);

// Storage of the KV cache: one K and one V row of kv_dim per token and layer.
enum class KvType { kF32, kF16, kBF16, kQ8_0, kFP8 };
Result<KvType> kv_type_from_name(std::string_view name);  // "f32", "f16", "bf16", "q8_0", "fp8"
std::string_view kv_type_name(KvType type);
double kv_bytes_per_element(KvType type);  // q8_0: 34/32 (32 int8 + one f16 scale)

// What one step (a decode step of a batch, a prefill chunk, or a mix) must move and compute.
struct StepCost {
  double weight_bytes = 0;      // weights streamed (once per step)
  double kv_read_bytes = 0;     // K and V rows attended
  double kv_write_bytes = 0;    // K and V rows of the new tokens
  double activation_bytes = 0;  // f32 inputs/outputs of every matmul (estimate)
  double flops = 0;             // all FLOPs, attention included
  double attention_flops = 0;   // the attention part of `flops`

  double bytes() const { return weight_bytes + kv_read_bytes + kv_write_bytes + activation_bytes; }
  double intensity() const { return bytes() > 0 ? flops / bytes() : 0; }  // FLOP/byte
};

// Per-model quantities, computed once from a config and the tensor types.
struct ModelCost {
  ModelConfig config;
  KvType kv_type = KvType::kF16;
  double n_params = 0;             // every weight element (embedding counted once when tied)
  double weight_file_bytes = 0;    // all weights as stored: memory they occupy
  double weight_read_bytes = 0;    // streamed per decode step (layers, output head, norms)
  double embd_row_bytes = 0;       // one token_embd row (read per token, not per step)
  double layer_flops_per_token = 0;   // 2 * layer matrix elements
  double head_flops_per_row = 0;      // 2 * n_vocab * n_embd, per row that needs logits
  double activation_bytes_per_token = 0;  // layer matmuls' f32 inputs and outputs
  double head_activation_bytes = 0;       // head input + logits, per row that needs logits
  double kv_bytes_per_token = 0;   // K + V, all layers, per token of context

  // FLOPs to decode one token at context c (matmuls + head + attention over c positions).
  double flops_per_token(int64_t context) const;
  double attention_flops_per_position() const;  // 4 * n_layer * q_dim
};

// Builds the per-model figures; fails when a type cannot store a row of the model (a block
// size that does not divide the row) and no fallback applies.
Result<ModelCost> model_cost(const ModelConfig& cfg, const TensorTypeFn& types, KvType kv_type);

// The work of one sequence in a step: `n_new` tokens appended after `n_past` cached ones.
// Only the last new token of each sequence computes logits (the output head).
struct SeqWork {
  int64_t n_past = 0;
  int64_t n_new = 1;
};

// A general step: weights once (if any token), each sequence's KV read once per step,
// per-token matmul and attention FLOPs.
StepCost cost_of_step(const ModelCost& m, std::span<const SeqWork> seqs);
// `batch` sequences each decoding one token at context `context` (new token included):
// bytes = weights + batch * KV(context); FLOPs = batch * flops_per_token(context).
StepCost cost_of_step(const ModelCost& m, int64_t batch, int64_t context);
// One prompt of n_tokens processed in one step (prefill).
StepCost cost_of_prefill(const ModelCost& m, int64_t n_tokens);

}  // namespace ridge::model
