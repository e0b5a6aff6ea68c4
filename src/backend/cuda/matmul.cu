// Kernels of matmul.h. The arithmetic lives in quant_blocks.h (host-tested); this file maps it
// onto the GPU: one warp per output row j, each lane dequantizing its units of W[j] once per group
// of up to MT rows of x, then one fixed butterfly reduction over the 32 lanes.
#include "backend/cuda/matmul.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/quant_blocks.h"
#include "base/check.h"

namespace ridge::backend::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;     // matmul: one output row per warp
constexpr int kGetRowsThreads = 128;  // get_rows: one block per token, threads over units
constexpr int64_t kMaxGridY = 65535;
constexpr int64_t kMaxGridX = 0x7fffffff;

// The warp's sum of v, in the order xor_tree_sum models on the host: 5 butterfly steps, lane l
// adding lane l ^ off's value (off = 16, 8, 4, 2, 1). Every lane gets the sum.
__device__ __forceinline__ float butterfly_sum(float v) {
  RIDGE_UNROLL
  for (int off = 16; off > 0; off /= 2) v = rn_add(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// y[i][j] for the rows j of this block's warps and the x rows i of groups blockIdx.y,
// blockIdx.y + gridDim.y, ... (MT rows each). Lane r of the warp stores row r of the group.
template <GgmlType T, int MT>
__global__ void __launch_bounds__(kWarpsPerBlock * 32, 2)
    matmul_kernel(const uint8_t* __restrict__ w, uint64_t row_bytes, int64_t rows, int64_t cols,
                  const float* __restrict__ x, int64_t ldx, int64_t m, float* y, int64_t ldy) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (j >= rows) return;  // the whole warp leaves together
  const uint8_t* wrow = w + static_cast<uint64_t>(j) * row_bytes;
  for (int64_t i0 = static_cast<int64_t>(blockIdx.y) * MT; i0 < m;
       i0 += static_cast<int64_t>(gridDim.y) * MT) {
    const int nr = static_cast<int>(m - i0 < MT ? m - i0 : MT);
    float acc[MT];
    lane_partials<T, MT>(wrow, cols, x + i0 * ldx, ldx, nr, lane, acc);
    RIDGE_UNROLL
    for (int r = 0; r < MT; ++r) {
      if (r >= nr) break;  // nr is the same in every lane
      const float s = butterfly_sum(acc[r]);
      if (lane == r) y[(i0 + r) * ldy + j] = s;
    }
  }
}

// out row t = W[ids[t]] * scale for the tokens t of this block (blockIdx.x, + gridDim.x, ...).
template <GgmlType T>
__global__ void __launch_bounds__(kGetRowsThreads)
    get_rows_kernel(const uint8_t* __restrict__ w, uint64_t row_bytes, int64_t rows, int64_t cols,
                    const int32_t* __restrict__ ids, int64_t n, float scale, float* out) {
  const int64_t n_units = units_of(cols);
  for (int64_t t = blockIdx.x; t < n; t += gridDim.x) {
    const int32_t id = ids[t];
    const bool ok = id >= 0 && id < rows;
    const uint8_t* wrow = w + static_cast<uint64_t>(ok ? id : 0) * row_bytes;
    for (int64_t u = threadIdx.x; u < n_units; u += blockDim.x) {
      const int valid = unit_valid(cols, u);
      float v[kUnit];
      if (ok) {
        scaled_unit<T>(wrow, u, valid, scale, v);
      } else {
        RIDGE_UNROLL
        for (int e = 0; e < kUnit; ++e) v[e] = __int_as_float(0x7fffffff);  // a bad id: NaN
      }
      float* p = out + t * cols + u * kUnit;
      if (valid == kUnit && (reinterpret_cast<uintptr_t>(p) & 15) == 0) {
        RIDGE_UNROLL
        for (int k = 0; k < 8; ++k) {
          reinterpret_cast<float4*>(p)[k] = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
        }
      } else {
        RIDGE_UNROLL
        for (int e = 0; e < kUnit; ++e) {
          if (e < valid) p[e] = v[e];
        }
      }
    }
  }
}

// The argument checks both launches share.
void check_matrix(const DeviceMatrix& w) {
  RIDGE_CHECK(matmul_supports(w.type));
  RIDGE_CHECK(w.rows >= 0 && w.cols >= 0);
  const GgmlTypeTraits& tr = traits(w.type);
  RIDGE_CHECK(w.cols % tr.block_elems == 0);
  RIDGE_CHECK(w.row_bytes >= static_cast<uint64_t>(w.cols / tr.block_elems) * tr.block_bytes);
  RIDGE_CHECK(w.data != nullptr || w.rows == 0 || w.cols == 0);
}

template <GgmlType T, int MT>
void launch_matmul_mt(const DeviceMatrix& w, const float* x, int64_t ldx, int64_t m, float* y,
                      int64_t ldy, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((w.rows + kWarpsPerBlock - 1) / kWarpsPerBlock),
                  static_cast<unsigned>(std::min<int64_t>((m + MT - 1) / MT, kMaxGridY)));
  matmul_kernel<T, MT><<<grid, kWarpsPerBlock * 32, 0, stream>>>(
      static_cast<const uint8_t*>(w.data), w.row_bytes, w.rows, w.cols, x, ldx, m, y, ldy);
}

// The group size: as many x rows as there are, up to 8 (the per-row arithmetic is the same for
// every MT; a small MT only saves registers for decode).
template <GgmlType T>
void launch_matmul_t(const DeviceMatrix& w, const float* x, int64_t ldx, int64_t m, float* y,
                     int64_t ldy, cudaStream_t stream) {
  if (m == 1) return launch_matmul_mt<T, 1>(w, x, ldx, m, y, ldy, stream);
  if (m == 2) return launch_matmul_mt<T, 2>(w, x, ldx, m, y, ldy, stream);
  if (m <= 4) return launch_matmul_mt<T, 4>(w, x, ldx, m, y, ldy, stream);
  launch_matmul_mt<T, 8>(w, x, ldx, m, y, ldy, stream);
}

}  // namespace

bool matmul_supports(GgmlType type) { return unit_type_supported(type); }

void launch_matmul(const DeviceMatrix& w, const float* x, int64_t ldx, int64_t m, float* y,
                   int64_t ldy, cudaStream_t stream) {
  check_matrix(w);
  RIDGE_CHECK(m >= 0);
  if (m == 0 || w.rows == 0) return;
  RIDGE_CHECK((w.rows + kWarpsPerBlock - 1) / kWarpsPerBlock <= kMaxGridX);
  RIDGE_CHECK(y != nullptr && ldy >= w.rows);
  RIDGE_CHECK((x != nullptr && ldx >= w.cols) || w.cols == 0);
  with_unit_type(w.type, [&](auto type) {
    launch_matmul_t<decltype(type)::value>(w, x, ldx, m, y, ldy, stream);
  });
}

void launch_get_rows(const DeviceMatrix& w, const int32_t* ids, int64_t n, float scale, float* out,
                     cudaStream_t stream) {
  check_matrix(w);
  RIDGE_CHECK(n >= 0);
  if (n == 0 || w.cols == 0) return;
  RIDGE_CHECK(ids != nullptr && out != nullptr);
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(n, kMaxGridX));
  with_unit_type(w.type, [&](auto type) {
    get_rows_kernel<decltype(type)::value><<<grid, kGetRowsThreads, 0, stream>>>(
        static_cast<const uint8_t*>(w.data), w.row_bytes, w.rows, w.cols, ids, n, scale, out);
  });
}

}  // namespace ridge::backend::cuda
