// Paged attention on the device (ops.h launch_attention): one warp per (token, query head). The
// warp walks the positions the token sees 32 at a time: each lane scores one position (q · K
// row, read in the cache's type), the warp keeps the running max and sum of an online softmax,
// and each lane accumulates its own dimensions of the output from the chunk's V rows. Every
// (token, head) is computed alone in an order fixed by its context, so its bits do not depend on
// the batch.
#include "backend/cuda/device_rows.cuh"
#include "backend/cuda/ops.h"

namespace ridge::backend::cuda {
namespace {

constexpr int kHeadsPerBlock = 4;                // warps per block
constexpr int kDimsPerLane = kMaxHeadDim / kWarp;  // output dimensions a lane owns, at most

__global__ void attention_kernel(AttentionArgs a) {
  __shared__ float q_shared[kHeadsPerBlock][kMaxHeadDim];
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  const int64_t t = blockIdx.y;
  const int64_t h = static_cast<int64_t>(blockIdx.x) * kHeadsPerBlock + warp;
  if (h >= a.n_head) return;  // a whole warp leaves; no block-wide barrier follows
  const int64_t hd = a.head_dim, qd = a.n_head * hd;
  const int64_t kvh = h / (a.n_head / a.n_head_kv);
  float* q = q_shared[warp];
  for (int64_t i = lane; i < hd; i += kWarp) q[i] = a.q[t * qd + h * hd + i];
  __syncwarp();

  const int64_t pos = a.step.positions[t];
  const int32_t seq = a.step.seq_index[t];
  const int32_t* table = a.block_ids + a.step.block_offsets[seq];
  const int64_t first = a.window > 0 && pos - a.window + 1 > 0 ? pos - a.window + 1 : 0;
  const int64_t bs = a.kv.block_size;

  float m = a.sinks != nullptr ? a.sinks[h] : -INFINITY;  // running max
  float l = a.sinks != nullptr ? 1.0f : 0.0f;             // running sum of exp(s - m)
  float o[kDimsPerLane];
#pragma unroll
  for (int k = 0; k < kDimsPerLane; ++k) o[k] = 0.0f;

  for (int64_t start = first; start <= pos; start += kWarp) {
    const int64_t j = start + lane;
    float s = -INFINITY;
    if (j <= pos) {
      const uint8_t* krow = a.kv.k + table[j / bs] * a.kv.block_stride + kvh * a.kv.head_stride +
                            (j % bs) * a.kv.row_bytes;
      float dot = 0.0f;
      for (int64_t i = 0; i < hd; ++i) dot += q[i] * kv_value(a.kv.type, krow, i);
      s = dot * a.scale;
      if (a.softcap > 0.0f) s = a.softcap * tanhf(s / a.softcap);
    }
    const float m_new = fmaxf(m, warp_max(s));
    const float correction = expf(m - m_new);
    const float p = j <= pos ? expf(s - m_new) : 0.0f;
    l = l * correction + warp_sum(p);
#pragma unroll
    for (int k = 0; k < kDimsPerLane; ++k) o[k] *= correction;
    const int64_t n_in_chunk = pos - start + 1 < kWarp ? pos - start + 1 : kWarp;
    for (int64_t jj = 0; jj < n_in_chunk; ++jj) {
      const float pj = __shfl_sync(0xffffffffu, p, static_cast<int>(jj));
      const int64_t jp = start + jj;
      const uint8_t* vrow = a.kv.v + table[jp / bs] * a.kv.block_stride +
                            kvh * a.kv.head_stride + (jp % bs) * a.kv.row_bytes;
#pragma unroll
      for (int k = 0; k < kDimsPerLane; ++k) {
        const int64_t i = lane + static_cast<int64_t>(k) * kWarp;
        if (i < hd) o[k] += pj * kv_value(a.kv.type, vrow, i);
      }
    }
    m = m_new;
  }

  const float inv = 1.0f / l;
  float* out = a.out + t * qd + h * hd;
  const float* gate = a.q_gate != nullptr ? a.q_gate + t * 2 * qd + (2 * h + 1) * hd : nullptr;
#pragma unroll
  for (int k = 0; k < kDimsPerLane; ++k) {
    const int64_t i = lane + static_cast<int64_t>(k) * kWarp;
    if (i >= hd) continue;
    float v = o[k] * inv;
    if (gate != nullptr) v *= 1.0f / (1.0f + expf(-gate[i]));
    out[i] = v;
  }
}

}  // namespace

void launch_attention(const AttentionArgs& a, cudaStream_t s) {
  if (a.step.n_tokens <= 0 || a.n_head <= 0) return;
  const dim3 grid(static_cast<unsigned>((a.n_head + kHeadsPerBlock - 1) / kHeadsPerBlock),
                  static_cast<unsigned>(a.step.n_tokens));
  attention_kernel<<<grid, kHeadsPerBlock * kWarp, 0, s>>>(a);
}

}  // namespace ridge::backend::cuda
