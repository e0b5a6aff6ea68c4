#include "kernels/matmul_driver.h"

#include <cmath>
#include <memory>
#include <new>

#include "base/check.h"
#include "kernels/quant/act_q8_k.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

// Below this many rows the caller quantizes the activations alone: a second parallel region
// costs more than the work (a 4096-wide row quantizes in about a microsecond).
constexpr int64_t kParallelQuantizeRows = 8;

struct AlignedDelete {
  void operator()(void* p) const { ::operator delete[](p, std::align_val_t(64)); }
};
using AlignedBuffer = std::unique_ptr<void, AlignedDelete>;

AlignedBuffer aligned_alloc64(size_t bytes) {
  return AlignedBuffer(::operator new[](bytes == 0 ? 64 : bytes, std::align_val_t(64)));
}

// Round half to even, as the x86 SIMD round of ggml's quantizer, in plain arithmetic (adding and
// subtracting 1.5 * 2^23 rounds |v| < 2^22 to an integer in the default rounding mode). v is
// first clamped to [-127, 127] (NaN to 0, so non-finite activations give defined, if
// meaningless, blocks); in range |v| <= 127 + ulps the clamp changes nothing.
inline int32_t round_even_clamped(float v) {
  v = v == v ? v : 0.0f;
  v = v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v);
  return static_cast<int32_t>((v + 12582912.0f) - 12582912.0f);
}

// ggml's Q8_1 s of each 32-element block of x: fp16(amax/127 * sum), amax and the unrounded
// scale recomputed here because the Q8_0 quantizers keep only the fp16-rounded d.
void q8_1_block_terms(const float* x, int64_t n, const int32_t* sums, float* s) {
  for (int64_t b = 0; b < n / kQ8_0Block; ++b) {
    float amax = 0.0f;
    for (int64_t k = 0; k < kQ8_0Block; ++k) {
      const float a = std::fabs(x[b * kQ8_0Block + k]);
      amax = a > amax ? a : amax;
    }
    s[b] = fp16_to_f32(f32_to_fp16(amax / 127.0f * static_cast<float>(sums[b])));
  }
}

}  // namespace

void quantize_act_row_q8_0(const float* x, int64_t n, int8_t* qs, float* d, int32_t* sums) {
  const int64_t nb = n / kQ8_0Block;
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + b * kQ8_0Block;
    float amax = 0.0f;
    for (int64_t k = 0; k < kQ8_0Block; ++k) {
      const float a = std::fabs(xb[k]);
      amax = a > amax ? a : amax;  // NaN never wins, as with fmaxf
    }
    const float db = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;  // ggml's x86 path: not 1 / db
    int32_t sum = 0;
    for (int64_t k = 0; k < kQ8_0Block; ++k) {
      const auto q = static_cast<int8_t>(round_even_clamped(xb[k] * id));
      qs[b * kQ8_0Block + k] = q;
      sum += q;
    }
    d[b] = fp16_to_f32(f32_to_fp16(db));
    sums[b] = sum;
  }
}

void run_matmul(const TypeTable& table, const WeightView& w, const float* x, int64_t ldx,
                int64_t m, float* y, int64_t ldy, ThreadPool& pool) {
  const TypeMatmul* entry = table.find(w.type);
  RIDGE_CHECK(entry != nullptr);
  const int64_t block = traits(w.type).block_elems;
  RIDGE_CHECK(m >= 0 && w.rows >= 0 && w.cols >= 0 && w.cols % block == 0);
  RIDGE_CHECK(m == 0 || (ldx >= w.cols && ldy >= w.rows));
  if (m == 0 || w.rows == 0) return;

  Acts acts;
  acts.m = m;
  acts.cols = w.cols;
  acts.f32 = x;
  acts.ldx = ldx;
  AlignedBuffer buffer;
  if (entry->act == ActFormat::kQ8_0 || entry->act == ActFormat::kQ8_1) {
    RIDGE_CHECK(w.cols % kQ8_0Block == 0);
    const int64_t nb = w.cols / kQ8_0Block;
    const auto n_qs = static_cast<size_t>(m * w.cols);
    const auto n_blocks = static_cast<size_t>(m * nb);
    const bool q8_1 = entry->act == ActFormat::kQ8_1;
    buffer = aligned_alloc64(n_qs + n_blocks * (sizeof(float) + sizeof(int32_t) + (q8_1 ? sizeof(float) : 0)));
    auto* qs = static_cast<int8_t*>(buffer.get());
    auto* d = reinterpret_cast<float*>(qs + n_qs);
    auto* sums = reinterpret_cast<int32_t*>(d + n_blocks);
    auto* s = q8_1 ? reinterpret_cast<float*>(sums + n_blocks) : nullptr;
    auto quantize_rows = [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        table.quantize_q8_0(x + i * ldx, w.cols, qs + i * w.cols, d + i * nb, sums + i * nb);
        if (q8_1) q8_1_block_terms(x + i * ldx, w.cols, sums + i * nb, s + i * nb);
      }
    };
    if (m < kParallelQuantizeRows || pool.size() == 1) {
      quantize_rows(0, m);
    } else {
      pool.run([&](int ith, int nth) {
        const Range r = split_range(m, ith, nth);
        quantize_rows(r.begin, r.end);
      });
    }
    acts.q8_qs = qs;
    acts.q8_d = d;
    acts.q8_sum = sums;
    acts.q8_s = s;
  } else if (entry->act == ActFormat::kF32AsF16 || entry->act == ActFormat::kF32AsBf16) {
    buffer = aligned_alloc64(static_cast<size_t>(m * w.cols) * sizeof(float));
    auto* xr = static_cast<float*>(buffer.get());
    const bool bf16 = entry->act == ActFormat::kF32AsBf16;
    for (int64_t i = 0; i < m; ++i) {
      const float* xi = x + i * ldx;
      float* ri = xr + i * w.cols;
      if (bf16) {
        for (int64_t k = 0; k < w.cols; ++k) ri[k] = bf16_to_f32(f32_to_bf16(xi[k]));
      } else {
        for (int64_t k = 0; k < w.cols; ++k) ri[k] = fp16_to_f32(f32_to_fp16(xi[k]));
      }
    }
    acts.f32 = xr;
    acts.ldx = w.cols;
  } else if (entry->act == ActFormat::kQ8_K) {
    buffer = aligned_alloc64(acts_q8_k_bytes(m, w.cols));
    quantize_acts_q8_k(x, ldx, m, w.cols, buffer.get(), &acts);
  }

  const MatmulRowsFn rows = entry->rows;
  const int64_t grain = entry->row_grain;
  if (pool.size() == 1) {
    rows(w, acts, 0, w.rows, y, ldy);
    return;
  }
  pool.run([&](int ith, int nth) {
    const Range r = split_range(w.rows, ith, nth, grain);
    if (r.begin < r.end) rows(w, acts, r.begin, r.end, y, ldy);
  });
}

}  // namespace ridge::kernels
