// Scalar attention loops: the specification the SIMD versions follow (and the fallback for
// head_dims they do not cover). Rows are converted in chunks so any head_dim works.
#include <algorithm>

#include "kv/kv_cache.h"
#include "backend/cpu/attention_kernels.h"
#include "backend/cpu/model_names.h"
#include "model/ops.h"

namespace ridge::backend::cpu {
namespace {

constexpr int64_t kChunk = 256;  // values converted at a time (a multiple of the q8_0 block)

// Values [i0, i0 + n) of a row as f32 (i0 a multiple of kChunk).
void load_part(kv::KvType type, const uint8_t* row, int64_t hd, int64_t i0, int64_t n, float* dst) {
  const uint64_t off = type == kv::KvType::kQ8_0
                           ? static_cast<uint64_t>(i0 / kv::kQ8Block * kv::kQ8BlockBytes)
                           : kv::kv_row_bytes(type, hd) / static_cast<uint64_t>(hd) * static_cast<uint64_t>(i0);
  kv::kv_load_row(type, row + off, dst, n);
}

void qk_ref(kv::KvType type, const void* k, int64_t n_rows, const AttnQueries& qs, float scale,
            float* scores, int64_t ld) {
  const int64_t hd = qs.hd;
  const uint64_t rb = kv::kv_row_bytes(type, hd);
  float part[kChunk];
  for (int64_t j = 0; j < n_rows; ++j) {
    const auto* row = static_cast<const uint8_t*>(k) + static_cast<uint64_t>(j) * rb;
    for (int64_t q = 0; q < qs.n_q; ++q) {
      const float* x = qs.q_at(q);
      float acc = 0.0f;
      for (int64_t i0 = 0; i0 < hd; i0 += kChunk) {
        const int64_t n = std::min(kChunk, hd - i0);
        load_part(type, row, hd, i0, n, part);
        for (int64_t i = 0; i < n; ++i) acc += x[i0 + i] * part[i];
      }
      scores[q * ld + j] = acc * scale;
    }
  }
}

void pv_ref(kv::KvType type, const void* v, int64_t n_rows, const float* p, int64_t ld, int64_t skip,
            const AttnQueries& qs) {
  const int64_t hd = qs.hd;
  const uint64_t rb = kv::kv_row_bytes(type, hd);
  float part[kChunk];
  for (int64_t j = 0; j < n_rows; ++j) {
    const int64_t q0 = attn_first_query(j, skip, qs.group);
    if (q0 >= qs.n_q) break;  // later rows are seen by fewer queries
    const auto* row = static_cast<const uint8_t*>(v) + static_cast<uint64_t>(j) * rb;
    for (int64_t i0 = 0; i0 < hd; i0 += kChunk) {
      const int64_t n = std::min(kChunk, hd - i0);
      load_part(type, row, hd, i0, n, part);
      for (int64_t q = q0; q < qs.n_q; ++q) {
        const float w = p[q * ld + j];
        float* y = qs.out_at(q) + i0;
        for (int64_t i = 0; i < n; ++i) y[i] += w * part[i];
      }
    }
  }
}

}  // namespace

const AttnKernels& attn_kernels_ref() {
  static const AttnKernels k{qk_ref, pv_ref, softmax};
  return k;
}

}  // namespace ridge::backend::cpu
