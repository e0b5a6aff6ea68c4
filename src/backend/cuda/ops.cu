// The CUDA backend's row kernels (ops.h): norms, the residual join, the attention input with its
// K/V write, the FFN activations and the small row moves. One block per row where a row needs a
// reduction; elementwise kernels over flat ranges.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/device_rows.cuh"
#include "backend/cuda/ops.h"

namespace ridge::backend::cuda {
namespace {

constexpr int kRowThreads = 256;

unsigned blocks_for(int64_t count, int threads) {
  return static_cast<unsigned>((count + threads - 1) / threads);
}

__global__ void rms_norm_kernel(const float* x, const float* w, float* y, int64_t d, float eps) {
  __shared__ float scratch[32];
  const int64_t r = blockIdx.x;
  const float* xr = x + r * d;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) ss += xr[i] * xr[i];
  const float scale = rms_scale(block_sum(ss, scratch), d, eps);
  float* yr = y + r * d;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    yr[i] = w != nullptr ? xr[i] * scale * w[i] : xr[i] * scale;
  }
}

__global__ void residual_kernel(ResidualArgs a) {
  __shared__ float scratch[32];
  const int64_t r = blockIdx.x, d = a.d;
  float* p = a.proj + r * d;
  float* x = a.x + r * d;
  // Each thread touches only its own indices until the reductions, so no barrier is needed
  // between the elementwise steps; block_sum's barriers order the rest.
  if (a.bias != nullptr) {
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) p[i] += a.bias[i];
  }
  if (a.post_norm != nullptr) {
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) ss += p[i] * p[i];
    const float scale = rms_scale(block_sum(ss, scratch), d, a.eps);
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) p[i] = p[i] * scale * a.post_norm[i];
  }
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) x[i] += p[i];
  if (a.next_norm != nullptr) {
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) ss += x[i] * x[i];
    const float scale = rms_scale(block_sum(ss, scratch), d, a.eps);
    float* xn = a.xn + r * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) xn[i] = x[i] * scale * a.next_norm[i];
  }
}

// RMSNorm of each of n_heads vectors of hd in place (w null: no weight), a warp per head.
__device__ void norm_heads(float* v, const float* w, int64_t n_heads, int64_t hd, float eps) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  const int n_warps = static_cast<int>(blockDim.x) / kWarp;
  for (int64_t h = warp; h < n_heads; h += n_warps) {
    float* x = v + h * hd;
    float ss = 0.0f;
    for (int64_t i = lane; i < hd; i += kWarp) ss += x[i] * x[i];
    const float scale = rms_scale(warp_sum(ss), hd, eps);
    for (int64_t i = lane; i < hd; i += kWarp) x[i] = w != nullptr ? x[i] * scale * w[i] : x[i] * scale;
  }
}

// The rotary embedding of n_heads vectors (model::rope): each thread rotates whole pairs.
__device__ void rope_heads(float* v, int64_t n_heads, int64_t hd, int64_t rope_dims, bool neox,
                           const float* cs, const float* sn) {
  const int64_t half = rope_dims / 2;
  for (int64_t k = threadIdx.x; k < n_heads * half; k += blockDim.x) {
    const int64_t h = k / half, i = k % half;
    float* x = v + h * hd;
    const int64_t ia = neox ? i : 2 * i, ib = neox ? i + half : 2 * i + 1;
    const float a = x[ia], b = x[ib];
    x[ia] = __fsub_rn(__fmul_rn(a, cs[i]), __fmul_rn(b, sn[i]));
    x[ib] = __fadd_rn(__fmul_rn(a, sn[i]), __fmul_rn(b, cs[i]));
  }
}

// One head's row of hd values into the cache in its type (kv_store_row's rounding); called by
// a whole warp.
__device__ void store_kv_row(KvStore type, const float* src, uint8_t* dst, int64_t hd) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  switch (type) {
    case KvStore::kF32:
      for (int64_t i = lane; i < hd; i += kWarp) reinterpret_cast<float*>(dst)[i] = src[i];
      return;
    case KvStore::kF16:
      for (int64_t i = lane; i < hd; i += kWarp) {
        reinterpret_cast<uint16_t*>(dst)[i] = __half_as_ushort(__float2half_rn(src[i]));
      }
      return;
    case KvStore::kBF16:
      for (int64_t i = lane; i < hd; i += kWarp) {
        reinterpret_cast<uint16_t*>(dst)[i] = __bfloat16_as_ushort(__float2bfloat16_rn(src[i]));
      }
      return;
    case KvStore::kQ8_0:
      for (int64_t b = 0; b < hd / 32; ++b) {  // lane i holds value i of the block
        const float x = src[b * 32 + lane];
        const float amax = warp_max(fabsf(x));
        const float d = __fdiv_rn(amax, 127.0f);
        const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
        uint8_t* blk = dst + b * 34;
        if (lane == 0) {
          const uint16_t dh = __half_as_ushort(__float2half_rn(d));
          blk[0] = static_cast<uint8_t>(dh & 0xff);
          blk[1] = static_cast<uint8_t>(dh >> 8);
        }
        blk[2 + lane] = static_cast<uint8_t>(static_cast<int8_t>(roundf(__fmul_rn(x, id))));
      }
      return;
  }
}

__global__ void attention_input_kernel(AttentionInputArgs a) {
  const int64_t t = blockIdx.x, hd = a.head_dim;
  const int64_t qd = a.n_head * hd, kvd = a.n_head_kv * hd, half = a.rope_dims / 2;
  float* q = a.q + t * qd;
  if (a.q_gate != nullptr) {
    const float* qg = a.q_gate + t * 2 * qd;
    for (int64_t i = threadIdx.x; i < qd; i += blockDim.x) q[i] = qg[(i / hd) * 2 * hd + i % hd];
  }
  if (a.bq != nullptr) {
    for (int64_t i = threadIdx.x; i < qd; i += blockDim.x) q[i] += a.bq[i];
  }
  const bool with_kv = a.slots != nullptr;
  float* k = a.k + t * kvd;
  float* v = a.v + t * kvd;
  if (with_kv) {
    for (int64_t i = threadIdx.x; i < kvd; i += blockDim.x) {
      if (a.v_from_k) v[i] = k[i];
      if (a.bk != nullptr) k[i] += a.bk[i];
      if (a.bv != nullptr) v[i] += a.bv[i];
    }
  }
  __syncthreads();
  if (a.q_norm != nullptr) norm_heads(q, a.q_norm, a.n_head, hd, a.eps);
  if (with_kv && a.k_norm != nullptr) norm_heads(k, a.k_norm, a.n_head_kv, hd, a.eps);
  if (with_kv && a.v_norm) norm_heads(v, nullptr, a.n_head_kv, hd, a.eps);
  __syncthreads();
  const float* cs = a.cos + t * half;
  const float* sn = a.sin + t * half;
  rope_heads(q, a.n_head, hd, a.rope_dims, a.neox, cs, sn);
  if (!with_kv) return;
  rope_heads(k, a.n_head_kv, hd, a.rope_dims, a.neox, cs, sn);
  __syncthreads();
  const int warp = static_cast<int>(threadIdx.x) / kWarp, n_warps = static_cast<int>(blockDim.x) / kWarp;
  const int64_t slot = a.slots[t];
  for (int64_t h = warp; h < a.n_head_kv; h += n_warps) {
    store_kv_row(a.kv.type, k + h * hd, kv_row(a.kv, a.kv.k, slot, h), hd);
    store_kv_row(a.kv.type, v + h * hd, kv_row(a.kv, a.kv.v, slot, h), hd);
  }
}

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// ggml's f16 GELU table lookup (model::geglu_with).
__device__ __forceinline__ float geglu_value(const float* table, float gate, float up) {
  if (gate <= -10.0f) return 0.0f;
  if (gate >= 10.0f) return gate * up;
  return table[__half_as_ushort(__float2half_rn(gate))] * up;
}

__global__ void gated_activation_kernel(Activation act, float* g, const float* u,
                                        const float* gate_bias, const float* up_bias,
                                        const float* table, int64_t n, int64_t count) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = k % n;
    const float gj = g[k] + (gate_bias != nullptr ? gate_bias[j] : 0.0f);
    const float uj = u[k] + (up_bias != nullptr ? up_bias[j] : 0.0f);
    switch (act) {
      case Activation::kSwiglu: g[k] = gj * sigmoid(gj) * uj; break;
      case Activation::kGeglu: g[k] = geglu_value(table, gj, uj); break;
      case Activation::kSwigluOai: {
        const float x = fminf(gj, 7.0f);
        const float y = fminf(fmaxf(uj, -7.0f), 7.0f);
        g[k] = x / (1.0f + expf(1.702f * -x)) * (y + 1.0f);
        break;
      }
    }
  }
}

__global__ void add_bias_kernel(float* y, int64_t ldy, const float* bias, int64_t n, int64_t count) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[(k / n) * ldy + k % n] += bias[k % n];
  }
}

__global__ void softcap_kernel(float* z, int64_t count, float cap) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    z[k] = cap * tanhf(z[k] / cap);
  }
}

__global__ void scale_kernel(float* x, int64_t count, float s) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[k] *= s;
  }
}

__global__ void geglu_kernel(const float* gate, const float* up, float* out, const float* table,
                             int64_t count) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[k] = geglu_value(table, gate[k], up[k]);
  }
}

__global__ void previous_rows_kernel(const float* rows, const float* prev, float* out, int64_t d,
                                     StepView step) {
  const int64_t t = blockIdx.x;
  const int32_t seq = step.seq_index[t];
  const bool same = t > 0 && step.seq_index[t - 1] == seq;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    out[t * d + i] = same ? rows[(t - 1) * d + i] : prev != nullptr ? prev[seq * d + i] : 0.0f;
  }
}

// Rows move one after another (row r's source is at or after r and after every earlier source),
// each thread over its own columns, so no row is overwritten before it is read.
__global__ void gather_rows_kernel(float* data, int64_t width, const int32_t* kept, int64_t n_kept) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= width) return;
  for (int64_t r = 0; r < n_kept; ++r) {
    const int64_t src = kept[r];
    if (src != r) data[r * width + i] = data[src * width + i];
  }
}

constexpr unsigned kMaxFlatBlocks = 4096;

unsigned flat_blocks(int64_t count) {
  const unsigned b = blocks_for(count, kRowThreads);
  return b < kMaxFlatBlocks ? (b == 0 ? 1 : b) : kMaxFlatBlocks;
}

}  // namespace

void launch_rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t d, float eps,
                     cudaStream_t s) {
  if (rows > 0) rms_norm_kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, s>>>(x, w, y, d, eps);
}

void launch_residual(const ResidualArgs& a, cudaStream_t s) {
  if (a.m > 0) residual_kernel<<<static_cast<unsigned>(a.m), kRowThreads, 0, s>>>(a);
}

void launch_attention_input(const AttentionInputArgs& a, cudaStream_t s) {
  if (a.n_tokens > 0) attention_input_kernel<<<static_cast<unsigned>(a.n_tokens), kRowThreads, 0, s>>>(a);
}

void launch_gated_activation(Activation act, float* g, const float* u, const float* gate_bias,
                             const float* up_bias, const float* gelu_table, int64_t rows,
                             int64_t n, cudaStream_t s) {
  const int64_t count = rows * n;
  if (count > 0) {
    gated_activation_kernel<<<flat_blocks(count), kRowThreads, 0, s>>>(act, g, u, gate_bias, up_bias,
                                                                      gelu_table, n, count);
  }
}

void launch_add_bias(float* y, int64_t ldy, const float* bias, int64_t rows, int64_t n,
                     cudaStream_t s) {
  const int64_t count = rows * n;
  if (count > 0) add_bias_kernel<<<flat_blocks(count), kRowThreads, 0, s>>>(y, ldy, bias, n, count);
}

void launch_softcap(float* z, int64_t count, float cap, cudaStream_t s) {
  if (count > 0) softcap_kernel<<<flat_blocks(count), kRowThreads, 0, s>>>(z, count, cap);
}

void launch_scale(float* x, int64_t count, float scale, cudaStream_t s) {
  if (count > 0) scale_kernel<<<flat_blocks(count), kRowThreads, 0, s>>>(x, count, scale);
}

void launch_geglu(const float* gate, const float* up, float* out, const float* gelu_table,
                  int64_t count, cudaStream_t s) {
  if (count > 0) geglu_kernel<<<flat_blocks(count), kRowThreads, 0, s>>>(gate, up, out, gelu_table, count);
}

void launch_previous_rows(const float* rows, const float* prev, float* out, int64_t d,
                          const StepView& step, cudaStream_t s) {
  if (step.n_tokens > 0) {
    previous_rows_kernel<<<static_cast<unsigned>(step.n_tokens), kRowThreads, 0, s>>>(rows, prev, out, d, step);
  }
}

void launch_gather_rows_in_place(float* data, int64_t width, const int32_t* kept, int64_t n_kept,
                                 cudaStream_t s) {
  if (n_kept > 0 && width > 0) {
    gather_rows_kernel<<<blocks_for(width, kRowThreads), kRowThreads, 0, s>>>(data, width, kept, n_kept);
  }
}

}  // namespace ridge::backend::cuda
