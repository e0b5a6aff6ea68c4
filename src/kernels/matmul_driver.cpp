#include "kernels/matmul_driver.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <optional>
#include <utility>

#include "base/check.h"
#include "base/thread_scratch.h"
#include "base/work_queues.h"
#include "kernels/quant/act_q8_k.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

// Below this many rows the caller quantizes the activations alone: a second parallel region
// costs more than the work (a 4096-wide row quantizes in about a microsecond).
constexpr int64_t kParallelQuantizeRows = 8;

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

namespace {

// f(i0, i1) over [0, m) split among the pool's threads, or on the caller alone for few rows.
template <class F>
void for_row_ranges(int64_t m, ThreadPool& pool, F&& f) {
  if (m < kParallelQuantizeRows || pool.size() == 1) {
    f(int64_t{0}, m);
    return;
  }
  pool.run([&](int ith, int nth) {
    const Range r = split_range(m, ith, nth);
    f(r.begin, r.end);
  });
}

// Activations converted once into the format a rows routine reads; owns the converted copy.
static_assert(kScratchActs + kMaxGroup <= kScratchKernelTables, "one scratch slot per activation format");

// x converted to `format` in `buffer` (this thread's scratch `slot`), described by the result.
Acts prepare_acts(const TypeTable& table, ActFormat format, const float* x, int64_t ldx, int64_t m,
                  int64_t cols, ThreadPool& pool, std::optional<ThreadScratch>& buffer, ScratchSlot slot) {
  Acts acts;
  acts.m = m;
  acts.cols = cols;
  acts.f32 = x;
  acts.ldx = ldx;
  if (format == ActFormat::kQ8_0 || format == ActFormat::kQ8_1) {
    RIDGE_CHECK(cols % kQ8_0Block == 0);
    const int64_t nb = cols / kQ8_0Block;
    const auto n_qs = static_cast<size_t>(m * cols);
    const auto n_blocks = static_cast<size_t>(m * nb);
    const bool q8_1 = format == ActFormat::kQ8_1;
    buffer.emplace(slot, n_qs + n_blocks * (sizeof(float) + sizeof(int32_t) + (q8_1 ? sizeof(float) : 0)));
    auto* qs = static_cast<int8_t*>(buffer->data());
    auto* d = reinterpret_cast<float*>(qs + n_qs);
    auto* sums = reinterpret_cast<int32_t*>(d + n_blocks);
    auto* s = q8_1 ? reinterpret_cast<float*>(sums + n_blocks) : nullptr;
    for_row_ranges(m, pool, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        table.quantize_q8_0(x + i * ldx, cols, qs + i * cols, d + i * nb, sums + i * nb);
        if (q8_1) q8_1_block_terms(x + i * ldx, cols, sums + i * nb, s + i * nb);
      }
    });
    acts.q8_qs = qs;
    acts.q8_d = d;
    acts.q8_sum = sums;
    acts.q8_s = s;
  } else if (format == ActFormat::kF32AsF16 || format == ActFormat::kF32AsBf16) {
    buffer.emplace(slot, static_cast<size_t>(m * cols) * sizeof(float));
    auto* xr = static_cast<float*>(buffer->data());
    const bool bf16 = format == ActFormat::kF32AsBf16;
    for_row_ranges(m, pool, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const float* xi = x + i * ldx;
        float* ri = xr + i * cols;
        if (bf16) {
          for (int64_t k = 0; k < cols; ++k) ri[k] = bf16_to_f32(f32_to_bf16(xi[k]));
        } else {
          for (int64_t k = 0; k < cols; ++k) ri[k] = fp16_to_f32(f32_to_fp16(xi[k]));
        }
      }
    });
    acts.f32 = xr;
    acts.ldx = cols;
  } else if (format == ActFormat::kQ8_K) {
    buffer.emplace(slot, acts_q8_k_bytes(m, cols));
    const ActsQ8KLayout l = layout_acts_q8_k(m, cols, buffer->data(), &acts);
    for_row_ranges(m, pool, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        table.quantize_q8_k(x + i * ldx, cols, l.row_qs(i), l.row_d(i), l.row_bsums(i));
      }
    });
  }
  return acts;
}

}  // namespace

void run_matmul(const TypeTable& table, const WeightView& w, const float* x, int64_t ldx,
                int64_t m, float* y, int64_t ldy, ThreadPool& pool) {
  const MatmulTarget one{&w, y, ldy};
  run_matmul_group(table, std::span<const MatmulTarget>(&one, 1), x, ldx, m, pool, nullptr);
}

void run_matmul_group(const TypeTable& table, std::span<const MatmulTarget> targets,
                      const float* x, int64_t ldx, int64_t m, ThreadPool& pool,
                      const MatmulEpilogue* epilogue) {
  RIDGE_CHECK(!targets.empty() && targets.size() <= kMaxGroup && m >= 0);
  const int64_t cols = targets[0].w->cols;
  std::array<const TypeMatmul*, kMaxGroup> entries{};
  for (size_t t = 0; t < targets.size(); ++t) {
    const WeightView& w = *targets[t].w;
    entries[t] = table.find(w.type);
    RIDGE_CHECK(entries[t] != nullptr);
    RIDGE_CHECK(w.cols == cols && w.rows >= 0 && cols % traits(w.type).block_elems == 0);
    RIDGE_CHECK(w.layout == WeightLayout::kRows || w.layout == entries[t]->layout);
    RIDGE_CHECK(m == 0 || (ldx >= cols && targets[t].ldy >= w.rows));
    RIDGE_CHECK(epilogue == nullptr || w.rows == targets[0].w->rows);
  }
  // An epilogue sees one row range for the whole group, so every matrix then splits alike, on
  // a grain that is a multiple of each one's (a split never changes a result, only who computes it).
  int64_t common_grain = 1;
  for (size_t t = 0; t < targets.size(); ++t) common_grain = std::lcm(common_grain, entries[t]->row_grain);
  if (m == 0) return;

  // Each activation format the group needs, converted once (Q, K and V of a Q4_K_M file may
  // mix Q4_K and Q6_K, both reading Q8_K).
  std::array<std::optional<ThreadScratch>, kMaxGroup> buffers;
  std::array<Acts, kMaxGroup> prepared;
  std::array<const Acts*, kMaxGroup> acts{};
  for (size_t t = 0; t < targets.size(); ++t) {
    size_t same = t;
    for (size_t u = 0; u < t; ++u) {
      if (entries[u]->act == entries[t]->act) {
        same = u;
        break;
      }
    }
    if (same == t) {
      const auto slot = static_cast<ScratchSlot>(kScratchActs + static_cast<int>(t));
      prepared[t] = prepare_acts(table, entries[t]->act, x, ldx, m, cols, pool, buffers[t], slot);
    }
    acts[t] = &prepared[same];
  }

  // Each thread's share of each matrix (split_range's, in grains) numbered as one run of units:
  // matrix 0's grains, then matrix 1's... With an epilogue a unit is a grain of rows of every
  // matrix, followed by the epilogue on those rows. Threads then balance through WorkQueues.
  const int nth = pool.size();
  const size_t n_maps = epilogue != nullptr ? 1 : targets.size();
  auto grain_of = [&](size_t t) { return epilogue != nullptr ? common_grain : entries[t]->row_grain; };
  // Thread i's share of matrix t: its first grain and how many.
  auto share_of = [&](size_t t, int i) {
    const int64_t g = grain_of(t);
    const Range r = split_range(targets[t].w->rows, i, nth, g);
    return std::pair<int64_t, int64_t>{r.begin / g, (r.end - r.begin + g - 1) / g};
  };
  auto run_units = [&](int owner, int64_t u0, int64_t u1) {
    int64_t base = 0;  // the owner's units before matrix t
    for (size_t t = 0; t < n_maps; ++t) {
      const auto [g0, n] = share_of(t, owner);
      const int64_t a = std::max(u0, base) - base, b = std::min(u1, base + n) - base;
      base += n;
      if (a >= b) continue;
      const int64_t g = grain_of(t), rows = targets[t].w->rows;
      const int64_t r0 = std::min((g0 + a) * g, rows), r1 = std::min((g0 + b) * g, rows);
      if (epilogue == nullptr) {
        entries[t]->rows(*targets[t].w, *acts[t], r0, r1, targets[t].y, targets[t].ldy);
        continue;
      }
      for (size_t e = 0; e < targets.size(); ++e) {
        entries[e]->rows(*targets[e].w, *acts[e], r0, r1, targets[e].y, targets[e].ldy);
      }
      epilogue->fn(epilogue->ctx, r0, r1);
    }
  };
  auto units_of = [&](int i) {
    int64_t n = 0;
    for (size_t t = 0; t < n_maps; ++t) n += share_of(t, i).second;
    return n;
  };
  if (nth == 1) {
    run_units(0, 0, units_of(0));
    return;
  }
  WorkQueues queues(nth);
  for (int i = 0; i < nth; ++i) queues.set(i, units_of(i));
  pool.run([&](int ith, int) { queues.drain(ith, run_units); });
}

}  // namespace ridge::kernels
