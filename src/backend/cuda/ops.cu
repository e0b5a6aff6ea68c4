// The CUDA backend's row kernels (ops.h): norms, the residual join, the attention input with its
// K/V write (their bodies in row_ops.h, shared with the host tests), the FFN activations and the
// small row moves. One block per row where a row needs a reduction; elementwise kernels over
// flat ranges.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/device_rows.cuh"
#include "backend/cuda/ops.h"
#include "backend/cuda/row_ops.h"

namespace ridge::backend::cuda {
namespace {

constexpr int kRowThreads = 256;

unsigned blocks_for(int64_t count, int threads) {
  return static_cast<unsigned>((count + threads - 1) / threads);
}

// The block operations row_ops.h's bodies use, on the GPU.
struct DeviceBlock {
  float* scratch;  // 32 floats of shared memory
  __device__ int thread() const { return static_cast<int>(threadIdx.x); }
  __device__ int size() const { return static_cast<int>(blockDim.x); }
  __device__ void sync() const { __syncthreads(); }
  __device__ float sum(float v) const { return block_sum(v, scratch); }
  __device__ float warp_sum(float v) const { return cuda::warp_sum(v); }
  __device__ float warp_max(float v) const { return cuda::warp_max(v); }
};

__global__ void rms_norm_kernel(const float* x, const float* w, float* y, int64_t d, float eps) {
  __shared__ float scratch[32];
  DeviceBlock b{scratch};
  const int64_t r = blockIdx.x;
  rms_norm_row(x + r * d, w, y + r * d, d, eps, b);
}

__global__ void residual_kernel(ResidualArgs a) {
  __shared__ float scratch[32];
  DeviceBlock b{scratch};
  residual_row(a, static_cast<int64_t>(blockIdx.x), b);
}

__global__ void attention_input_kernel(AttentionInputArgs a) {
  __shared__ float scratch[32];
  DeviceBlock b{scratch};
  attention_input_row(a, static_cast<int64_t>(blockIdx.x), b);
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
