// Device helpers the CUDA kernels share: block and warp reductions, and a K/V row's address.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backend/cuda/ops.h"

namespace ridge::backend::cuda {

inline constexpr int kWarp = 32;

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The sum of v over the block (blockDim.x a multiple of 32, at most 1024), in a fixed order; every
// thread gets it. `scratch` holds 32 floats of shared memory; the call begins and ends with a
// barrier, so it may be called again with the same scratch.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  const int n_warps = static_cast<int>(blockDim.x) / kWarp;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = lane < n_warps ? scratch[lane] : 0.0f;
  total = warp_sum(total);
  __syncthreads();
  return total;
}

// 1 / sqrt(mean + eps) as the host computes it (a division and a correctly rounded sqrt).
__device__ __forceinline__ float rms_scale(float sum_squares, int64_t n, float eps) {
  return 1.0f / __fsqrt_rn(__fdiv_rn(sum_squares, static_cast<float>(n)) + eps);
}

// The address of a token's K (or V) row of KV head h at `slot` of the layer's space.
__device__ __forceinline__ uint8_t* kv_row(const KvLayer& kv, uint8_t* base, int64_t slot,
                                           int64_t h) {
  const int64_t block = slot / kv.block_size, off = slot % kv.block_size;
  return base + block * kv.block_stride + h * kv.head_stride + off * kv.row_bytes;
}

}  // namespace ridge::backend::cuda
