// The shared matmul driver and its per-type extension point.
//
// Every ISA fills a TypeTable: for each weight type it supports, a routine that computes one
// thread's share of output rows (`MatmulRowsFn`) and the activation format that routine reads.
// The driver (matmul_driver.cpp, ISA-neutral) prepares the activations once per call, splits the
// output rows over the pool and calls the routine. Adding a weight type to an ISA means writing
// its rows routine in that ISA's directory and one line in the ISA's table function
// (ref/ref_table.cpp; isa_tables.cpp for AVX2 and AVX-512). See docs/kernels.md.
#pragma once

#include <array>
#include <span>
#include <cstdint>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/quant/act_q8_k.h"
#include "tensor/ggml_type.h"

namespace ridge::kernels {

// Activation formats a rows routine can ask for; the driver converts x once per matmul.
enum class ActFormat : uint8_t {
  kF32,   // x as given
  // x rounded to f16 / bf16 (nearest even) and held as f32: ggml's vec_dot_type for F16 / BF16
  // weights, so those models give llama.cpp's numbers (each f16 x f16 or bf16 x bf16 product
  // is then exact in f32; only the summation order differs).
  kF32AsF16,
  kF32AsBf16,
  kQ8_0,  // 32-element blocks, d = amax/127 rounded to fp16, q = round(x*127/amax) (ggml, x86)
  // kQ8_0 plus ggml's Q8_1 block term s = fp16(d * sum of q) with d = amax/127 *before* its fp16
  // rounding: what ggml multiplies the min of a Q4_1 / Q5_1 block by (m * s, not m * d * sum).
  kQ8_1,
  kQ8_K,  // 256-element blocks for the K formats (kernels/quant/act_q8_k.h)
};

constexpr int64_t kQ8_0Block = 32;

// Activations as the rows routine sees them. Rows are i in [0, m).
struct Acts {
  int64_t m = 0;
  int64_t cols = 0;
  // kF32: x[i][k] = f32[i * ldx + k].
  const float* f32 = nullptr;
  int64_t ldx = 0;
  // kQ8_0: row i has cols/32 blocks; block b of row i: q8_qs[i * cols + 32 b ...] (int8, 64-byte
  // aligned rows when cols % 64 == 0), scale q8_d[i * nb + b] (an fp16 value held as f32), and
  // q8_sum[i * nb + b] = sum of its 32 qs (for kernels that offset one operand by 128).
  const int8_t* q8_qs = nullptr;
  const float* q8_d = nullptr;
  const int32_t* q8_sum = nullptr;
  // kQ8_1 only: q8_s[i * nb + b] = s of block b of row i (an fp16 value held as f32).
  const float* q8_s = nullptr;
  // kQ8_K: q8_qs as above (256-element blocks), scale q8k_d[i * nb + b] (f32), and
  // q8k_bsums[(i * nb + b) * 16 + g] = sum of the g-th 16 qs of the block.
  const float* q8k_d = nullptr;
  const int16_t* q8k_bsums = nullptr;
};

// Computes y[i * ldy + j] for every i < a.m and j in [j0, j1). Must give each y[i][j] the same
// bits whatever m, j0, j1 are (batch invariance), and must only write its own rows j.
using MatmulRowsFn = void (*)(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y,
                              int64_t ldy);

struct TypeMatmul {
  MatmulRowsFn rows = nullptr;
  ActFormat act = ActFormat::kF32;
  int64_t row_grain = 1;  // threads get multiples of this many output rows (the panel height)
  // Besides kRows, the one other layout `rows` reads (and prefers; kRows: none).
  WeightLayout layout = WeightLayout::kRows;
};

constexpr size_t kTypeIdCount = 40;  // ggml type ids are < 40 (see tensor/ggml_type.h)

// ggml's Q8_0 quantization of one activation row of n (multiple of 32) elements as llama.cpp
// runs it on x86 (the AVX path of quantize_row_q8_0, also its Q8_1 and repacked 4-row forms):
// per block d = amax/127, q = round-half-even(x * (127/amax)); d is stored rounded to fp16 (as
// f32). ggml's portable C reference differs in the last bit: 1/d and roundf.
// ISAs may install a faster routine in TypeTable::quantize_q8_0 that gives the same bytes.
void quantize_act_row_q8_0(const float* x, int64_t n, int8_t* qs, float* d, int32_t* sums);
using QuantizeActRowFn = void (*)(const float* x, int64_t n, int8_t* qs, float* d, int32_t* sums);
// Q8_K rows (kernels/quant/act_q8_k.h); ISAs may install a faster routine giving the same bytes.
using QuantizeActRowQ8KFn = void (*)(const float* x, int64_t n, int8_t* qs, float* d,
                                     int16_t* bsums);

// dst[0, n) = the n elements of src (a whole number of the type's blocks) as f32.
using DequantizeRowFn = void (*)(const void* src, float* dst, int64_t n);

// An ISA's routines per weight type. ISA tables start as a copy of the ref table and override
// what they accelerate, so every type ref knows works (slowly) under every ISA.
struct TypeTable {
  std::array<TypeMatmul, kTypeIdCount> matmul{};
  std::array<DequantizeRowFn, kTypeIdCount> dequantize{};
  QuantizeActRowFn quantize_q8_0 = quantize_act_row_q8_0;  // ActFormat::kQ8_0 rows
  QuantizeActRowQ8KFn quantize_q8_k = quantize_act_row_q8_k;  // ActFormat::kQ8_K rows

  const TypeMatmul* find(GgmlType type) const {
    const auto id = static_cast<size_t>(type);
    if (id >= kTypeIdCount || matmul[id].rows == nullptr) return nullptr;
    return &matmul[id];
  }
  DequantizeRowFn find_dequantize(GgmlType type) const {
    const auto id = static_cast<size_t>(type);
    return id < kTypeIdCount ? dequantize[id] : nullptr;
  }
  void set(GgmlType type, TypeMatmul entry) { matmul[static_cast<size_t>(type)] = entry; }
  void set_dequantize(GgmlType type, DequantizeRowFn fn) {
    dequantize[static_cast<size_t>(type)] = fn;
  }
};

// y[m, rows] = x[m, cols] · W^T with the routines of `table` (CHECKs the type is supported and the
// shapes are consistent: cols a multiple of the type's block size, ldx >= cols, ldy >= rows).
void run_matmul(const TypeTable& table, const WeightView& w, const float* x, int64_t ldx,
                int64_t m, float* y, int64_t ldy, ThreadPool& pool);

// Several matrices of the same x (Q, K, V; gate and up): each activation format is prepared
// once and the threads compute every matrix's rows in one parallel region, each starting on its
// own share and then taking over what another has left (base/work_queues.h); each y is exactly
// what run_matmul gives. With an epilogue (all matrices of the same rows), a thread calls it on
// each row range [j0, j1) as soon as it has computed those rows in all of them, before the
// region ends (e.g. SwiGLU on gate and up, while those rows are in cache).
void run_matmul_group(const TypeTable& table, std::span<const MatmulTarget> targets,
                      const float* x, int64_t ldx, int64_t m, ThreadPool& pool,
                      const MatmulEpilogue* epilogue);


}  // namespace ridge::kernels
