// Paged attention on the device (ops.h launch_attention): one warp per (token, query head), the
// body in attention_warp.h (shared with the host tests), four heads per block.
#include "backend/cuda/attention_warp.h"
#include "backend/cuda/device_rows.cuh"
#include "backend/cuda/ops.h"

namespace ridge::backend::cuda {
namespace {

constexpr int kHeadsPerBlock = 4;  // warps per block

// The warp operations attend_one uses, as shuffles.
struct DeviceWarp {
  __device__ int lane() const { return static_cast<int>(threadIdx.x) % kWarp; }
  __device__ void sync() const { __syncwarp(); }
  __device__ float sum(float v) const { return warp_sum(v); }
  __device__ float max(float v) const { return warp_max(v); }
  __device__ float broadcast(float v, int src) const { return __shfl_sync(0xffffffffu, v, src); }
};

__global__ void attention_kernel(AttentionArgs a) {
  __shared__ float q_shared[kHeadsPerBlock][kMaxHeadDim];
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int64_t h = static_cast<int64_t>(blockIdx.x) * kHeadsPerBlock + warp;
  if (h >= a.n_head) return;  // a whole warp leaves; no block-wide barrier follows
  DeviceWarp w;
  attend_one(a, static_cast<int64_t>(blockIdx.y), h, w, q_shared[warp]);
}

}  // namespace

void launch_attention(const AttentionArgs& a, cudaStream_t s) {
  if (a.step.n_tokens <= 0 || a.n_head <= 0) return;
  const dim3 grid(static_cast<unsigned>((a.n_head + kHeadsPerBlock - 1) / kHeadsPerBlock),
                  static_cast<unsigned>(a.step.n_tokens));
  attention_kernel<<<grid, kHeadsPerBlock * kWarp, 0, s>>>(a);
}

}  // namespace ridge::backend::cuda
