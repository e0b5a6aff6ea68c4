// The seam between the one model definition (Model::forward) and the device that runs it. The
// forward says what a step computes, op by op; a Backend says where and how. Every pointer an op
// takes is memory of that backend (host memory for the CPU backend, src/backend/cpu); the step's
// inputs (tokens, positions, KV slots, block tables, context lengths) arrive once per step in
// begin_step and every op of the step reads them from there.
//
// Each op's result for a row depends on that row alone (batch invariance), and a backend gives
// the same bits for a row whatever the batch, its grouping or the threads.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "base/device_memory.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "model/attention.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/ffn.h"
#include "model/ops.h"
#include "model/weights.h"
#include "model/workspace.h"

namespace ridge::model {

// Token embeddings and the rotary tables of the step's rows.
struct EmbedOp {
  const kernels::WeightView* table = nullptr;  // [n_vocab, d]
  float scale = 1.0f;                          // rows times scale (gemma: sqrt(d))
  float* x = nullptr;                          // [n, d]
  int64_t d = 0;
  // cos/sin of each row's position, [n, rope_dims / 2] (rope_cos_sin); the _swa pair for the
  // sliding-window layers when their rope differs (null: none).
  // The tables' sizes, bases and scales are cfg's (rope_dims, swa_rope_dims, ...); their
  // frequency divisors rope_factors [rope_dims / 2] and rope_factors_swa [swa_rope_dims / 2].
  const ModelConfig* cfg = nullptr;
  const float* rope_factors = nullptr;
  const float* rope_factors_swa = nullptr;
  const YarnParams* yarn = nullptr;
  // cos null: the step's tables are already made (a second embedding of the same rows).
  float* cos = nullptr;
  float* sin = nullptr;
  float* cos_swa = nullptr;
  float* sin_swa = nullptr;
};

// An attention layer's input after its q/k/v matmuls, row by row: a gated layer's q out of
// q_gate, v copied from k where the layer has no V projection, biases, per-head q/k RMSNorms
// (and v's, without a weight, with v_norm), rotary embedding, then k and v into the KV cache at
// each row's slot. Without a cache (a layer reading another layer's KV) only q is computed.
struct AttentionInputOp {
  float* q = nullptr;             // [n, n_head * head_dim]
  float* k = nullptr;             // [n, n_head_kv * head_dim]
  float* v = nullptr;             // [n, n_head_kv * head_dim]
  const float* q_gate = nullptr;  // gated: wq's [n, 2 * n_head * head_dim] (each head's q, gate)
  const float* bq = nullptr;      // biases (null: none)
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* q_norm = nullptr;  // [head_dim] per-head RMSNorm weights (null: none)
  const float* k_norm = nullptr;
  bool v_from_k = false;          // v = k as projected (before k's bias, norm and rope)
  bool v_norm = false;            // v = RMSNorm(v) per head, no weight
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0;
  float eps = 0.0f;
  int64_t rope_dims = 0;
  RopeLayout rope_layout = RopeLayout::kNormal;
  const float* cos = nullptr;     // [n, rope_dims / 2]
  const float* sin = nullptr;
  kv::KvCache* cache = nullptr;
  int64_t kv_layer = 0;
};

// A sub-layer's output joining the residual stream, row by row: proj += bias, proj =
// RMSNorm(proj) * post_norm, x += proj, then (when next_norm) xn = RMSNorm(x) * next_norm.
struct ResidualOp {
  int64_t m = 0, d = 0;
  float eps = 0.0f;
  float* proj = nullptr;  // [m, d]
  const float* bias = nullptr;
  const float* post_norm = nullptr;
  float* x = nullptr;     // [m, d]
  const float* next_norm = nullptr;
  float* xn = nullptr;    // [m, d]
};

// Gemma 4's per-layer inputs of the step's rows, for every layer at once: layer l's row t is
// (RMSNorm(proj[t, l] / sqrt(n_embd)) * proj_norm + table[token t, l] * sqrt(p)) / sqrt(2),
// where proj[t, l] is the l-th p-wide piece of proj's row t (per_layer_model_proj · x).
struct PerLayerInputOp {
  const kernels::WeightView* table = nullptr;  // [n_vocab, n_layer * p]
  float* proj = nullptr;                       // [n, n_layer * p], scratch afterwards
  const float* proj_norm = nullptr;            // [p]
  int64_t n_layer = 0, p = 0, n_embd = 0;
  float eps = 0.0f;
  float* out = nullptr;   // layer l's rows [n, p] at out + l * ld_layer
  int64_t ld_layer = 0;
};

// A buffer of rows kept by keep_output_rows: rows of `width` floats.
struct RowBuffer {
  float* data = nullptr;
  int64_t width = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Threads the ops run on (a workspace is made for at most so many).
  virtual int n_threads() const = 0;
  // The device memory the ops read and write (the same object for every backend of a device;
  // it outlives them).
  virtual DeviceMemory& memory() = 0;

  // Called once by the runner, before its first step, with the model's weights: a device
  // backend copies each of weights.regions into its memory (in the layout it reads) and its ops
  // read its copy of a weight the model names by its host view. The CPU backend reads them in
  // place (bound for its kernel table at load).
  virtual Status load_weights(const Weights& weights) = 0;

  // The step's inputs, read by the ops until end_step (CUDA: where a decode step is captured
  // and replayed).
  virtual void begin_step(const Batch& batch) = 0;
  virtual void end_step() = 0;

  virtual void embed(const EmbedOp& op) = 0;
  // y[r] = RMSNorm(x[r]) * w for rows r < rows of d (y may be x).
  virtual void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t d,
                        float eps) = 0;
  // y[m, w.rows] (leading dimension ldy) = x[m, w.cols] (ldx) · w^T.
  virtual void matmul(const kernels::WeightView& w, const float* x, int64_t ldx, int64_t m,
                      float* y, int64_t ldy) = 0;
  // The same x against 1..kernels::kMaxGroup matrices of equal cols; each output has the bits
  // matmul would give it alone.
  virtual void matmul_group(std::span<const kernels::MatmulTarget> targets, const float* x,
                            int64_t ldx, int64_t m) = 0;
  // q and k are rewritten in place (normed, rotated), v too when it has a bias; the K/V rows
  // written to the cache are those final values.
  virtual void attention_input(const AttentionInputOp& op) = 0;
  // Paged attention of the step's rows; with q_gate (a gated layer's [n, 2 q_dim] wq output)
  // out *= sigmoid(each head's gate).
  virtual void attention(const AttentionOp& a, const float* q_gate) = 0;
  virtual void residual(const ResidualOp& op) = 0;
  // out[m, down.rows] (ldo) = down · act(gate · x, up · x) (GatedFfn: activation and biases);
  // gate_buf and up_buf hold m * gate.rows floats each: scratch, their contents afterwards
  // unspecified.
  virtual void gated_ffn(const GatedFfn& w, const float* x, int64_t ldx, int64_t m,
                         float* gate_buf, float* up_buf, float* out, int64_t ldo) = 0;
  // Whole ops of the mixture-of-experts FFN and the Gated DeltaNet layer (the CPU's:
  // backend/cpu/moe_ffn.h, gated_delta_net.h), with the recurrent state's per-step bookkeeping.
  virtual void moe_ffn(const ModelConfig& cfg, const LayerWeights& l, int64_t il, int64_t m,
                       Workspace& ws, float* out) = 0;
  virtual void begin_recurrent(kv::RecurrentState& states, Workspace& ws) = 0;
  virtual void gated_delta_net(const ModelConfig& cfg, const LayerWeights& l, int64_t il,
                               kv::RecurrentState& states, Workspace& ws) = 0;
  virtual void end_recurrent(kv::RecurrentState& states) = 0;
  // dst[r, 0:width] (leading dimension ldd) = src[r, 0:width] (lds), r < rows.
  virtual void copy_rows(const float* src, int64_t lds, float* dst, int64_t ldd, int64_t rows,
                         int64_t width) = 0;
  // out[r] = the step's row before r where it is the same sequence's (rows[r - 1]), else, for a
  // sequence's first row here, prev[its sequence] ([n_seqs, d], host memory: the batch's; null:
  // zeros). The MTP head's
  // h input: each position paired with the hidden state of the position before it.
  virtual void previous_rows(const float* rows, const float* prev, float* out, int64_t d) = 0;
  // Moves the rows that need logits to the front of each buffer ([n, width]), in order.
  virtual void keep_output_rows(std::span<const RowBuffer> buffers) = 0;
  // z = cap * tanh(z / cap) over rows of n.
  virtual void softcap(float* z, int64_t rows, int64_t n, float cap) = 0;
  // x *= s over rows of n.
  virtual void scale(float* x, int64_t rows, int64_t n, float s) = 0;
  // out = GeGLU(gate, up) (model/ffn.h geglu) over rows of n; out may be gate.
  virtual void geglu(const float* gate, const float* up, float* out, int64_t rows, int64_t n) = 0;
  virtual void per_layer_inputs(const PerLayerInputOp& op) = 0;
};

}  // namespace ridge::model
