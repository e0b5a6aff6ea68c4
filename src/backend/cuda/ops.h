// The CUDA backend's row kernels (ops.cu) and paged attention (attention.cu), launched by
// cuda_backend.cpp. A plain header: pointers, sizes, a stream; nvcc compiles the .cu files that
// include it without the rest of ridge (base/status.h does not build under nvcc 13).
//
// Every pointer is device memory unless its comment says otherwise. Each kernel computes a row
// (a token) from that row alone, in an order fixed by the row's sizes, so a row's bits do not
// depend on the batch (batch invariance, model/backend.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ridge::backend::cuda {

// kv::KvType's values (cuda_backend.cpp checks they match).
enum class KvStore : int32_t { kF32 = 0, kF16 = 1, kBF16 = 2, kQ8_0 = 3 };

// One layer's K and V storage in the paged cache (kv/kv_cache.h): the rows of KV head h of block
// b start at k + b * block_stride + h * head_stride, block_size rows of row_bytes each.
struct KvLayer {
  uint8_t* k = nullptr;
  uint8_t* v = nullptr;
  int64_t block_stride = 0, head_stride = 0, row_bytes = 0;
  int64_t block_size = 0;
  KvStore type = KvStore::kF16;
};

// The step's token metadata (model/batch.h), uploaded once per step.
struct StepView {
  int64_t n_tokens = 0;
  const int32_t* positions = nullptr;      // [n_tokens]
  const int32_t* seq_index = nullptr;      // [n_tokens]
  const int32_t* block_offsets = nullptr;  // [n_seqs + 1]
};

// y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w (w null: 1), rows of d; y may be x.
void launch_rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t d, float eps,
                     cudaStream_t s);

// model::ResidualOp: proj += bias; proj = RMSNorm(proj) * post_norm; x += proj;
// xn = RMSNorm(x) * next_norm (each step where its weight is given).
struct ResidualArgs {
  int64_t m = 0, d = 0;
  float eps = 0.0f;
  float* proj = nullptr;
  const float* bias = nullptr;
  const float* post_norm = nullptr;
  float* x = nullptr;
  const float* next_norm = nullptr;
  float* xn = nullptr;
};
void launch_residual(const ResidualArgs& a, cudaStream_t s);

// model::AttentionInputOp on the device: q from q_gate, biases, per-head norms, rotary
// embedding, and K/V into the cache at each token's slot (slots null: q only).
struct AttentionInputArgs {
  int64_t n_tokens = 0;
  float* q = nullptr;
  float* k = nullptr;
  float* v = nullptr;
  const float* q_gate = nullptr;
  const float* bq = nullptr;
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  bool v_from_k = false;
  bool v_norm = false;
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0;
  float eps = 0.0f;
  int64_t rope_dims = 0;
  bool neox = false;  // RopeLayout::kNeox: pairs (i, i + rope_dims / 2); else (2i, 2i + 1)
  const float* cos = nullptr;  // [n_tokens, rope_dims / 2]
  const float* sin = nullptr;
  const int64_t* slots = nullptr;  // [n_tokens] of the layer's space; null: no K/V written
  KvLayer kv;
};
void launch_attention_input(const AttentionInputArgs& a, cudaStream_t s);

// model::AttentionOp over the paged cache: each token and head a softmax over the positions it
// sees (window, sinks, softcap), times V; with q_gate, out *= sigmoid(the head's gate).
struct AttentionArgs {
  StepView step;
  const int32_t* block_ids = nullptr;  // the layer's space's tables, by step.block_offsets
  KvLayer kv;
  const float* q = nullptr;
  float* out = nullptr;
  const float* q_gate = nullptr;
  const float* sinks = nullptr;
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0;
  float scale = 1.0f;
  int64_t window = 0;
  float softcap = 0.0f;
};
// head_dim up to kMaxHeadDim.
inline constexpr int64_t kMaxHeadDim = 512;
void launch_attention(const AttentionArgs& a, cudaStream_t s);

// The gated FFN's activation, rows of n: g = act(g + gate_bias, u + up_bias) (biases may be
// null); geglu reads the f16 GELU table (65536 floats, model::gelu_f16_table) on the device.
enum class Activation : int32_t { kSwiglu = 0, kGeglu = 1, kSwigluOai = 2 };
void launch_gated_activation(Activation act, float* g, const float* u, const float* gate_bias,
                             const float* up_bias, const float* gelu_table, int64_t rows,
                             int64_t n, cudaStream_t s);
// y[r, i] (ldy) += bias[i], rows of n.
void launch_add_bias(float* y, int64_t ldy, const float* bias, int64_t rows, int64_t n,
                     cudaStream_t s);
// z = cap * tanh(z / cap); x *= s; out = GeGLU(gate, up) through the table: over count values.
void launch_softcap(float* z, int64_t count, float cap, cudaStream_t s);
void launch_scale(float* x, int64_t count, float scale, cudaStream_t s);
void launch_geglu(const float* gate, const float* up, float* out, const float* gelu_table,
                  int64_t count, cudaStream_t s);
// out[t] = rows[t - 1] where token t - 1 is of t's sequence, else prev[seq] (prev null: 0).
void launch_previous_rows(const float* rows, const float* prev, float* out, int64_t d,
                          const StepView& step, cudaStream_t s);
// data[r] = data[kept[r]] for r < n_kept (kept ascending), rows of width: in place, in order.
void launch_gather_rows_in_place(float* data, int64_t width, const int32_t* kept, int64_t n_kept,
                                 cudaStream_t s);

}  // namespace ridge::backend::cuda
