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
// - Mixture of experts: a step reads each layer's router, attention and shared expert once, and
//   each *distinct* expert its tokens were routed to once. Under uniform routing the expected
//   number of distinct experts for n tokens is E * (1 - (1 - k/E)^n) (k of E experts per token):
//   k at one token, -> E as n grows. FLOPs per token count the k experts each token uses.
// - Linear-attention layers (Qwen3.5's Gated DeltaNet) keep no KV: each sequence in a step reads
//   and writes its recurrent state (conv rows and delta-rule matrices, f32) once, whatever its
//   context; their FLOPs per token are the projections plus ~7 per state element (decay, S k,
//   the rank-1 update, S q) and the conv's taps. Attention FLOPs and KV count the other layers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kv/kv_type.h"
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
  // Mixture of experts (cfg.is_moe()): a layer's FFN is a router and n_expert experts, each one
  // slice of a 3-D tensor; qwen2moe adds a shared expert that every token uses. No ffn_gate/up/down.
  kFfnGateInp,       // blk.N.ffn_gate_inp   [n_expert, n_embd]: the router (f32 in GGUF files)
  kFfnGateExps,      // blk.N.ffn_gate_exps  n_expert x [n_ff_exp, n_embd]
  kFfnUpExps,        // blk.N.ffn_up_exps    n_expert x [n_ff_exp, n_embd]
  kFfnDownExps,      // blk.N.ffn_down_exps  n_expert x [n_embd, n_ff_exp]
  kFfnGateInpShexp,  // blk.N.ffn_gate_inp_shexp [n_embd]: the shared expert's gate (f32)
  kFfnGateShexp,     // blk.N.ffn_gate_shexp [n_ff_shexp, n_embd]
  kFfnUpShexp,       // blk.N.ffn_up_shexp   [n_ff_shexp, n_embd]
  kFfnDownShexp,     // blk.N.ffn_down_shexp [n_embd, n_ff_shexp]
  // Gated DeltaNet layers (cfg.is_recurrent_layer: no attn_q/k/v/output there).
  kSsmQkv,      // blk.N.attn_qkv    [conv_dim, n_embd]
  kSsmGate,     // blk.N.attn_gate   [Dv, n_embd]
  kSsmBeta,     // blk.N.ssm_beta    [Hv, n_embd]
  kSsmAlpha,    // blk.N.ssm_alpha   [Hv, n_embd]
  kSsmConv,     // blk.N.ssm_conv1d  [conv_dim, K] (f32)
  kSsmDtBias,   // blk.N.ssm_dt.bias [Hv]
  kSsmA,        // blk.N.ssm_a       [Hv] (no ".weight")
  kSsmNorm,     // blk.N.ssm_norm    [dv]
  kSsmOut,      // blk.N.ssm_out     [n_embd, Dv]
  // Gemma 4's per-layer embeddings (p = n_embd_per_layer).
  kPleTokenEmbd,   // per_layer_token_embd [n_vocab, n_layer * p] (one row read per token)
  kPleModelProj,   // per_layer_model_proj [n_layer * p, n_embd]
  kPleGate,        // blk.N.inp_gate [p, n_embd]
  kPleProj,        // blk.N.proj     [n_embd, p]
  kFfnGateUpExps,  // blk.N.ffn_gate_up_exps n_expert x [2 n_ff_exp, n_embd] (gemma4; stands for
                   // gate and up where the file fuses them)
};
std::string_view tensor_role_name(TensorRole role);
// The role whose type stands for the bulk of the weights (it picks the roofline's precision):
// ffn_up, or ffn_up_exps in a mixture-of-experts config.
TensorRole bulk_role(const ModelConfig& cfg);

// Storage type of the tensor with `role` in layer `layer` (-1 for tensors outside the layers).
using TensorTypeFn = std::function<GgmlType(TensorRole role, int64_t layer)>;

// Every matrix in `type`, norms and biases in f32 (as GGUF files store them).
TensorTypeFn uniform_types(GgmlType type);
// Every matrix in the type a rule gives its GGUF name ("blk.3.ffn_down.weight") and row length
// (a quantization mixture's, offline/weight_types.h); norms and biases in f32.
using TensorNameRule = std::function<GgmlType(std::string_view name, uint64_t cols)>;
TensorTypeFn types_by_tensor_name(TensorNameRule rule, const ModelConfig& cfg);
// The types of a real file's tensor table. A missing output head means tied embeddings. Asked for
// ffn_gate / ffn_up / ffn_down of a mixture-of-experts file (which has none), it answers with the
// experts' type, so that a caller picking a precision from the FFN gets the bulk of the weights.
Result<TensorTypeFn> weight_types_from_gguf(const gguf::File& file);

// What one step (a decode step of a batch, a prefill chunk, or a mix) must move and compute.
struct StepCost {
  double weight_bytes = 0;      // weights streamed (once per step)
  double kv_read_bytes = 0;     // K and V rows attended
  double kv_write_bytes = 0;    // K and V rows of the new tokens
  double activation_bytes = 0;  // f32 inputs/outputs of every matmul (estimate)
  double flops = 0;             // all FLOPs, attention included
  double attention_flops = 0;   // the attention part of `flops`
  double state_bytes = 0;       // recurrent state read and written (hybrid models)

  double bytes() const {
    return weight_bytes + kv_read_bytes + kv_write_bytes + activation_bytes + state_bytes;
  }
  double intensity() const { return bytes() > 0 ? flops / bytes() : 0; }  // FLOP/byte
};

// Per-model quantities, computed once from a config and the tensor types.
struct ModelCost {
  ModelConfig config;
  kv::KvType kv_type = kv::KvType::kF16;
  double n_params = 0;             // every weight element (embedding counted once when tied)
  double weight_file_bytes = 0;    // all weights as stored: memory they occupy
  double weight_read_bytes = 0;    // streamed per decode step of one sequence (layers, output head,
                                   // norms; an MoE's n_expert_used experts per layer)
  double embd_row_bytes = 0;       // one token_embd row (read per token, not per step)
  double layer_flops_per_token = 0;   // 2 * layer matrix elements applied to a token
  double head_flops_per_row = 0;      // 2 * n_vocab * n_embd, per row that needs logits
  double activation_bytes_per_token = 0;  // layer matmuls' f32 inputs and outputs
  double head_activation_bytes = 0;       // head input + logits, per row that needs logits
  double kv_bytes_per_token = 0;   // K + V, all attention layers, per token of context
  double state_bytes_per_seq = 0;  // recurrent state of one sequence, all linear layers (f32)
  // Sliding-window layers (gpt-oss, gemma3) read and attend to their last `window` positions only.
  int64_t window = 0;              // cfg.n_swa (0: none)
  int64_t n_window_layers = 0;     // layers with the window
  // K + V bytes and attention FLOPs per attended position, summed over the attention layers
  // without / with the window (a KV-sharing layer reads another layer's rows: counted too).
  double kv_read_full = 0, kv_read_window = 0;
  double attn_flops_full = 0, attn_flops_window = 0;
  // K + V bytes per token stored by the layers that keep their own, global / sliding-window.
  double kv_store_full = 0, kv_store_window = 0;
  // What one sequence of `context` positions keeps when the windowed layers keep only their
  // window (the engine's window space, unless --swa-full; only beside global layers):
  // min(context, window) positions there.
  double kv_bytes_kept(int64_t context) const {
    const double c = static_cast<double>(context);
    const bool apart = window > 0 && kv_store_full > 0 && kv_store_window > 0;
    return kv_store_full * c + kv_store_window * (apart ? std::min(c, static_cast<double>(window)) : c);
  }

  // Mixture of experts. For a dense model: active = total, dense_read_bytes = weight_read_bytes,
  // no experts.
  double n_active_params = 0;      // what one token uses: n_expert_used experts per layer, the
                                   // shared expert, routers, attention, norms, embedding and head
  double active_weight_bytes = 0;  // the bytes of those parameters
  double dense_read_bytes = 0;     // read every step whatever the routing: weight_read_bytes
                                   // without the routed experts
  std::vector<double> expert_bytes;   // per layer: one routed expert (its gate, up, down slices)
  double expert_bytes_all_layers = 0;  // sum of expert_bytes: one expert in every layer
  double expert_params = 0;            // elements of one expert in every layer

  bool is_moe() const { return config.n_expert > 0; }
  // FLOPs to decode one token at context c (matmuls + head + attention over c positions).
  double flops_per_token(int64_t context) const;
  double attention_flops_per_position() const;  // 4 * q_dim summed over the attention layers
  // K + V bytes a chunk of n_new tokens after `past` reads (each position once per step): every
  // position in full layers, the last window + n_new - 1 (capped) in sliding-window layers.
  double kv_read_bytes(double past, double n_new) const;
  // Attention FLOPs of that chunk: token i (1-based) attends past + i positions in full layers,
  // min(past + i, window) in sliding-window layers.
  double attention_flops(double past, double n_new) const;
  // Weights read by a step whose tokens reach `experts_per_layer` distinct experts in every
  // layer (the per-token embedding rows not included). Dense: weight_read_bytes.
  double weight_bytes_for_experts(double experts_per_layer) const;
};

// The expected number of distinct experts one layer reads for n_tokens tokens, each routed to
// n_used of n_expert experts uniformly at random: E * (1 - (1 - k/E)^n). Exactly k at one token
// (0 at none), below min(n*k, E), -> E as n grows.
double expected_distinct_experts(int64_t n_expert, int64_t n_used, double n_tokens);

// Builds the per-model figures; fails when a type cannot store a row of the model (a block
// size that does not divide the row) and no fallback applies.
Result<ModelCost> model_cost(const ModelConfig& cfg, const TensorTypeFn& types, kv::KvType kv_type);

// The work of one sequence in a step: `n_new` tokens appended after `n_past` cached ones.
// Only the last new token of each sequence computes logits (the output head).
struct SeqWork {
  int64_t n_past = 0;
  int64_t n_new = 1;
};

// A general step: weights once (if any token), each sequence's KV read once per step,
// per-token matmul and attention FLOPs. An MoE reads the expected number of distinct experts for
// the step's tokens (all sequences' new tokens together) in every layer.
StepCost cost_of_step(const ModelCost& m, std::span<const SeqWork> seqs);
// The same with the experts the router really chose: experts_read[l] distinct experts were read
// in layer l during this step (the union over its tokens); one value stands for every layer.
// Empty, or a dense model: as above.
StepCost cost_of_step(const ModelCost& m, std::span<const SeqWork> seqs, std::span<const int64_t> experts_read);
// A step's time on a roof: max(bytes / bandwidth, FLOPs / peak) in seconds (the FLOPs term
// only with peak_flops > 0); its bytes when there is no roof (bandwidth <= 0).
double roof_time(const StepCost& c, double bandwidth_bytes_per_s, double peak_flops);

// `batch` sequences each decoding one token at context `context` (new token included):
// bytes = weights + batch * KV(context); FLOPs = batch * flops_per_token(context).
StepCost cost_of_step(const ModelCost& m, int64_t batch, int64_t context);
// One prompt of n_tokens processed in one step (prefill).
StepCost cost_of_prefill(const ModelCost& m, int64_t n_tokens);
// The same step on a dense model of the same total size as `m` (each token applies every expert;
// every weight is read every step): what an MoE's step is compared with. Weights and FLOPs
// differ; KV and the activation estimate are the MoE's (so that the comparison shows what the
// experts change). For a dense `m`, cost_of_step itself.
StepCost dense_equivalent_step(const ModelCost& m, std::span<const SeqWork> seqs);
StepCost dense_equivalent_step(const ModelCost& m, int64_t batch, int64_t context);

}  // namespace ridge::model
