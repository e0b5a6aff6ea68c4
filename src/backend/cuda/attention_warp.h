// The paged attention of one (token, query head) by one warp: the body of attention.cu's kernel,
// written against a Warp (lane index, sync, sum, max, broadcast) so that the same code runs on
// the GPU (shuffles: DeviceWarp in attention.cu) and in the host tests (32 threads and a barrier:
// tests/backend/cuda/host_warp.h).
//
// The warp walks the positions the token sees 32 at a time: each lane scores one position (q · K
// row, read in the cache's type), the warp keeps the running max and sum of an online softmax,
// and each lane accumulates its own dimensions of the output from the chunk's V rows. Every
// (token, head) is computed alone in an order fixed by its context, so its bits do not depend on
// the batch.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/cuda/ops.h"
#include "backend/cuda/quant_blocks.h"

namespace ridge::backend::cuda {

inline constexpr int kAttentionLanes = 32;
inline constexpr int kDimsPerLane = static_cast<int>(kMaxHeadDim) / kAttentionLanes;

// Value i of a stored K/V row (row_bytes of one head's head_dim values), as kv_load_row reads it.
RIDGE_HD float kv_element(KvStore type, const uint8_t* row, int64_t i) {
  switch (type) {
    case KvStore::kF32: return reinterpret_cast<const float*>(row)[i];
    case KvStore::kF16: return fp16_bits_to_float(reinterpret_cast<const uint16_t*>(row)[i]);
    case KvStore::kBF16: return bf16_bits_to_float(reinterpret_cast<const uint16_t*>(row)[i]);
    case KvStore::kQ8_0: {
      const uint8_t* blk = row + (i / 32) * 34;
      const uint32_t d = static_cast<uint32_t>(blk[0]) | (static_cast<uint32_t>(blk[1]) << 8);
      return rn_mul(fp16_bits_to_float(d), static_cast<float>(static_cast<int8_t>(blk[2 + i % 32])));
    }
  }
  return 0.0f;
}

// The K (or V) row of position j of the token's sequence.
RIDGE_HD const uint8_t* kv_position_row(const KvLayer& kv, const uint8_t* base, const int32_t* table, int64_t kvh,
                                        int64_t j) {
  return base + table[j / kv.block_size] * kv.block_stride + kvh * kv.head_stride + (j % kv.block_size) * kv.row_bytes;
}

// Token t, query head h, on warp w; q_shared: kMaxHeadDim floats of the warp's own.
template <class Warp>
RIDGE_DEVICE_BODY void attend_one(const AttentionArgs& a, int64_t t, int64_t h, Warp& w, float* q) {
  const int lane = w.lane();
  const int64_t hd = a.head_dim, qd = a.n_head * hd;
  const int64_t kvh = h / (a.n_head / a.n_head_kv);
  for (int64_t i = lane; i < hd; i += kAttentionLanes) q[i] = a.q[t * qd + h * hd + i];
  w.sync();

  const int64_t pos = a.step.positions[t];
  const int32_t* table = a.block_ids + a.step.block_offsets[a.step.seq_index[t]];
  const int64_t first = a.window > 0 && pos - a.window + 1 > 0 ? pos - a.window + 1 : 0;

  float m = a.sinks != nullptr ? a.sinks[h] : -INFINITY;  // running max
  float l = a.sinks != nullptr ? 1.0f : 0.0f;             // running sum of exp(s - m)
  float o[kDimsPerLane];
  for (int k = 0; k < kDimsPerLane; ++k) o[k] = 0.0f;

  for (int64_t start = first; start <= pos; start += kAttentionLanes) {
    const int64_t j = start + lane;
    float s = -INFINITY;
    if (j <= pos) {
      const uint8_t* krow = kv_position_row(a.kv, a.kv.k, table, kvh, j);
      float dot = 0.0f;
      for (int64_t i = 0; i < hd; ++i) dot += q[i] * kv_element(a.kv.type, krow, i);
      s = dot * a.scale;
      if (a.softcap > 0.0f) s = a.softcap * tanhf(s / a.softcap);
    }
    const float m_new = fmaxf(m, w.max(s));
    const float correction = expf(m - m_new);
    const float p = j <= pos ? expf(s - m_new) : 0.0f;
    l = l * correction + w.sum(p);
    for (int k = 0; k < kDimsPerLane; ++k) o[k] *= correction;
    const int64_t n_in_chunk = pos - start + 1 < kAttentionLanes ? pos - start + 1 : kAttentionLanes;
    for (int64_t jj = 0; jj < n_in_chunk; ++jj) {
      const float pj = w.broadcast(p, static_cast<int>(jj));
      const uint8_t* vrow = kv_position_row(a.kv, a.kv.v, table, kvh, start + jj);
      for (int k = 0; k < kDimsPerLane; ++k) {
        const int64_t i = lane + static_cast<int64_t>(k) * kAttentionLanes;
        if (i < hd) o[k] += pj * kv_element(a.kv.type, vrow, i);
      }
    }
    m = m_new;
  }

  const float inv = 1.0f / l;
  float* out = a.out + t * qd + h * hd;
  const float* gate = a.q_gate != nullptr ? a.q_gate + t * 2 * qd + (2 * h + 1) * hd : nullptr;
  for (int k = 0; k < kDimsPerLane; ++k) {
    const int64_t i = lane + static_cast<int64_t>(k) * kAttentionLanes;
    if (i >= hd) continue;
    float v = o[k] * inv;
    if (gate != nullptr) v *= 1.0f / (1.0f + expf(-gate[i]));
    out[i] = v;
  }
}

}  // namespace ridge::backend::cuda
