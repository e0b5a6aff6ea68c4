// The bodies of ops.cu's per-row kernels (RMSNorm, the residual join, the attention input with
// its K/V write), one row per thread block, written against a Block (thread index, size, sync,
// the block's sum, a warp's sum and max) so that the same code runs on the GPU (DeviceBlock in
// ops.cu) and in the host tests (threads in lockstep: tests/backend/cuda/host_block.h).
//
// Each thread touches its own indices between the collectives; every sum is in a fixed order
// given by the row's size and the block's, never by the batch. A warp's sums and maxima involve
// that warp's 32 threads only; the block's sum and sync involve every thread.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/cuda/ops.h"
#include "backend/cuda/quant_blocks.h"
#include "tensor/fp16.h"

namespace ridge::backend::cuda {

inline constexpr int kRowWarp = 32;

// 1 / sqrt(mean + eps), as the host computes it.
RIDGE_HD float rms_scale(float sum_squares, int64_t n, float eps) {
  return 1.0f / sqrtf(sum_squares / static_cast<float>(n) + eps);
}

// f32 to IEEE half / bfloat16 bits, round to nearest even (kv_store_row's rounding).
RIDGE_HD uint16_t to_half_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(x));
#else
  return f32_to_fp16(x);
#endif
}
RIDGE_HD uint16_t to_bf16_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __bfloat16_as_ushort(__float2bfloat16_rn(x));
#else
  return f32_to_bf16(x);
#endif
}

template <class Block>
RIDGE_DEVICE_BODY void rms_norm_row(const float* xr, const float* w, float* yr, int64_t d, float eps, Block& b) {
  float ss = 0.0f;
  for (int64_t i = b.thread(); i < d; i += b.size()) ss += xr[i] * xr[i];
  const float scale = rms_scale(b.sum(ss), d, eps);
  for (int64_t i = b.thread(); i < d; i += b.size()) yr[i] = w != nullptr ? xr[i] * scale * w[i] : xr[i] * scale;
}

template <class Block>
RIDGE_DEVICE_BODY void residual_row(const ResidualArgs& a, int64_t r, Block& b) {
  const int64_t d = a.d;
  float* p = a.proj + r * d;
  float* x = a.x + r * d;
  if (a.bias != nullptr) {
    for (int64_t i = b.thread(); i < d; i += b.size()) p[i] += a.bias[i];
  }
  if (a.post_norm != nullptr) rms_norm_row(p, a.post_norm, p, d, a.eps, b);
  for (int64_t i = b.thread(); i < d; i += b.size()) x[i] += p[i];
  if (a.next_norm != nullptr) rms_norm_row(x, a.next_norm, a.xn + r * d, d, a.eps, b);
}

// RMSNorm of each of n_heads vectors of hd in place (w null: no weight), a warp per head.
template <class Block>
RIDGE_DEVICE_BODY void norm_heads(float* v, const float* w, int64_t n_heads, int64_t hd, float eps, Block& b) {
  const int lane = b.thread() % kRowWarp, warp = b.thread() / kRowWarp, n_warps = b.size() / kRowWarp;
  for (int64_t h = warp; h < n_heads; h += n_warps) {
    float* x = v + h * hd;
    float ss = 0.0f;
    for (int64_t i = lane; i < hd; i += kRowWarp) ss += x[i] * x[i];
    const float scale = rms_scale(b.warp_sum(ss), hd, eps);
    for (int64_t i = lane; i < hd; i += kRowWarp) x[i] = w != nullptr ? x[i] * scale * w[i] : x[i] * scale;
  }
}

// The rotary embedding of n_heads vectors (model::rope): each thread rotates whole pairs.
template <class Block>
RIDGE_DEVICE_BODY void rope_heads(float* v, int64_t n_heads, int64_t hd, int64_t rope_dims, bool neox, const float* cs,
                                 const float* sn, Block& b) {
  const int64_t half = rope_dims / 2;
  for (int64_t k = b.thread(); k < n_heads * half; k += b.size()) {
    const int64_t h = k / half, i = k % half;
    float* x = v + h * hd;
    const int64_t ia = neox ? i : 2 * i, ib = neox ? i + half : 2 * i + 1;
    const float xa = x[ia], xb = x[ib];
    x[ia] = rn_sub(rn_mul(xa, cs[i]), rn_mul(xb, sn[i]));
    x[ib] = rn_add(rn_mul(xa, sn[i]), rn_mul(xb, cs[i]));
  }
}

// One head's row of hd values into the cache in its type (kv_store_row's rounding), by one warp.
template <class Block>
RIDGE_DEVICE_BODY void store_kv_row(KvStore type, const float* src, uint8_t* dst, int64_t hd, Block& b) {
  const int lane = b.thread() % kRowWarp;
  switch (type) {
    case KvStore::kF32:
      for (int64_t i = lane; i < hd; i += kRowWarp) reinterpret_cast<float*>(dst)[i] = src[i];
      return;
    case KvStore::kF16:
      for (int64_t i = lane; i < hd; i += kRowWarp) reinterpret_cast<uint16_t*>(dst)[i] = to_half_bits(src[i]);
      return;
    case KvStore::kBF16:
      for (int64_t i = lane; i < hd; i += kRowWarp) reinterpret_cast<uint16_t*>(dst)[i] = to_bf16_bits(src[i]);
      return;
    case KvStore::kQ8_0:
      for (int64_t blk = 0; blk < hd / 32; ++blk) {  // lane i holds value i of the block
        const float x = src[blk * 32 + lane];
        const float amax = b.warp_max(fabsf(x));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        uint8_t* out = dst + blk * 34;
        if (lane == 0) {
          const uint16_t dh = to_half_bits(d);
          out[0] = static_cast<uint8_t>(dh & 0xff);
          out[1] = static_cast<uint8_t>(dh >> 8);
        }
        out[2 + lane] = static_cast<uint8_t>(static_cast<int8_t>(roundf(rn_mul(x, id))));
      }
      return;
  }
}

// model::AttentionInputOp for token t (ops.h AttentionInputArgs).
template <class Block>
RIDGE_DEVICE_BODY void attention_input_row(const AttentionInputArgs& a, int64_t t, Block& b) {
  const int64_t hd = a.head_dim;
  const int64_t qd = a.n_head * hd, kvd = a.n_head_kv * hd, half = a.rope_dims / 2;
  float* q = a.q + t * qd;
  if (a.q_gate != nullptr) {  // each head's q, then its gate
    const float* qg = a.q_gate + t * 2 * qd;
    for (int64_t i = b.thread(); i < qd; i += b.size()) q[i] = qg[(i / hd) * 2 * hd + i % hd];
  }
  if (a.bq != nullptr) {
    for (int64_t i = b.thread(); i < qd; i += b.size()) q[i] += a.bq[i];
  }
  const bool with_kv = a.slots != nullptr;
  float* k = a.k + t * kvd;
  float* v = a.v + t * kvd;
  if (with_kv) {
    for (int64_t i = b.thread(); i < kvd; i += b.size()) {
      if (a.v_from_k) v[i] = k[i];
      if (a.bk != nullptr) k[i] += a.bk[i];
      if (a.bv != nullptr) v[i] += a.bv[i];
    }
  }
  b.sync();
  if (a.q_norm != nullptr) norm_heads(q, a.q_norm, a.n_head, hd, a.eps, b);
  if (with_kv && a.k_norm != nullptr) norm_heads(k, a.k_norm, a.n_head_kv, hd, a.eps, b);
  if (with_kv && a.v_norm) norm_heads(v, nullptr, a.n_head_kv, hd, a.eps, b);
  b.sync();
  const float* cs = a.cos + t * half;
  const float* sn = a.sin + t * half;
  rope_heads(q, a.n_head, hd, a.rope_dims, a.neox, cs, sn, b);
  if (!with_kv) return;
  rope_heads(k, a.n_head_kv, hd, a.rope_dims, a.neox, cs, sn, b);
  b.sync();
  const int warp = b.thread() / kRowWarp, n_warps = b.size() / kRowWarp;
  const int64_t slot = a.slots[t];
  const int64_t block = slot / a.kv.block_size, off = slot % a.kv.block_size;
  for (int64_t h = warp; h < a.n_head_kv; h += n_warps) {
    const int64_t at = block * a.kv.block_stride + h * a.kv.head_stride + off * a.kv.row_bytes;
    store_kv_row(a.kv.type, k + h * hd, a.kv.k + at, hd, b);
    store_kv_row(a.kv.type, v + h * hd, a.kv.v + at, hd, b);
  }
}

}  // namespace ridge::backend::cuda
