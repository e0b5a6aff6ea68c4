// Device helpers the CUDA kernels share: block and warp reductions, and the KV cache's row
// formats (kv/kv_type.h) read and written on the device with the host's rounding.
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

__device__ __forceinline__ float f16_bits_to_f32(uint16_t h) {
  return __half2float(__ushort_as_half(h));
}
__device__ __forceinline__ float bf16_bits_to_f32(uint16_t h) {
  return __uint_as_float(static_cast<uint32_t>(h) << 16);
}

// Value i of a stored K/V row (row_bytes of one head's head_dim values).
__device__ __forceinline__ float kv_value(KvStore type, const uint8_t* row, int64_t i) {
  switch (type) {
    case KvStore::kF32: return reinterpret_cast<const float*>(row)[i];
    case KvStore::kF16: return f16_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
    case KvStore::kBF16: return bf16_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
    case KvStore::kQ8_0: {
      const uint8_t* blk = row + (i / 32) * 34;
      const uint16_t d = static_cast<uint16_t>(blk[0] | (blk[1] << 8));
      return __fmul_rn(f16_bits_to_f32(d), static_cast<float>(static_cast<int8_t>(blk[2 + i % 32])));
    }
  }
  return 0.0f;
}

// The address of a token's K (or V) row of KV head h at `slot` of the layer's space.
__device__ __forceinline__ uint8_t* kv_row(const KvLayer& kv, uint8_t* base, int64_t slot,
                                           int64_t h) {
  const int64_t block = slot / kv.block_size, off = slot % kv.block_size;
  return base + block * kv.block_stride + h * kv.head_stride + off * kv.row_bytes;
}

}  // namespace ridge::backend::cuda
