// Matmul and embedding lookup on GGUF weights in device memory (kernels in matmul.cu, arithmetic
// in quant_blocks.h). Plain launch header: includes no fmt, so both nvcc and the host compiler
// take it.
//
// Batch invariance: y[i][j] is one dot product whose arithmetic depends only on cols and the data
// of W[j] and x row i, not on m, the grid or the other rows (see lane_partials in quant_blocks.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/ggml_type.h"

namespace ridge::backend::cuda {

// A weight matrix in device memory, GGUF's row layout: `rows` rows of `cols` values, rows
// row_bytes apart.
struct DeviceMatrix {
  GgmlType type = GgmlType::kF32;
  const void* data = nullptr;
  int64_t rows = 0, cols = 0;
  uint64_t row_bytes = 0;
};

// Whether launch_matmul and launch_get_rows take weights of this type: F32, F16, BF16, Q4_0,
// Q4_1, Q5_0, Q5_1, Q8_0, Q2_K .. Q6_K, IQ4_NL, IQ4_XS.
bool matmul_supports(GgmlType type);

// y[i * ldy + j] = sum_c x[i * ldx + c] * W[j][c] for i < m, j < rows (x, y device f32).
// Asynchronous on `stream`; CHECKs only the arguments (a supported type, cols whole blocks,
// row_bytes and leading dimensions large enough).
void launch_matmul(const DeviceMatrix& w, const float* x, int64_t ldx, int64_t m, float* y,
                   int64_t ldy, cudaStream_t stream);

// out[t * cols + c] = W[ids[t]][c] * scale for t < n (ids: device int32), the embedding lookup.
// An id outside [0, rows) gives a row of NaN. Asynchronous on `stream`.
void launch_get_rows(const DeviceMatrix& w, const int32_t* ids, int64_t n, float scale, float* out,
                     cudaStream_t stream);

}  // namespace ridge::backend::cuda
