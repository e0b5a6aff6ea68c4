// Q8_K activations for the K-format dot kernels: per 256-element block a float scale
// d = 1 / (127 / amax), int8 q = round-half-even(x * 127 / amax) in [-127, 127] (ggml's rule up to
// the sign of q and d), and the sums of each 16 q (the mins and
// offsets of the weight formats multiply those instead of every element).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ridge::kernels {

struct Acts;

constexpr int64_t kQ8_KBlock = 256;

// One row of n (multiple of 256) floats: qs[n], d[n / 256], bsums[n / 16].
void quantize_act_row_q8_k(const float* x, int64_t n, int8_t* qs, float* d, int16_t* bsums);

// Bytes of the buffer quantize_acts_q8_k fills for m rows of `cols`.
size_t acts_q8_k_bytes(int64_t m, int64_t cols);
// Where row i's parts lie in such a buffer.
struct ActsQ8KLayout {
  int8_t* qs;
  float* d;
  int16_t* bsums;
  int64_t cols;
  int8_t* row_qs(int64_t i) const { return qs + i * cols; }
  float* row_d(int64_t i) const { return d + i * (cols / kQ8_KBlock); }
  int16_t* row_bsums(int64_t i) const { return bsums + i * (cols / kQ8_KBlock) * 16; }
};
// Lays m rows of `cols` out in `buffer` (64-byte aligned, acts_q8_k_bytes long) and points
// acts->q8_qs / q8k_d / q8k_bsums at it; the rows are then quantized into the returned layout.
ActsQ8KLayout layout_acts_q8_k(int64_t m, int64_t cols, void* buffer, Acts* acts);
// Both steps with the reference row quantizer: m rows of x (leading dimension ldx).
void quantize_acts_q8_k(const float* x, int64_t ldx, int64_t m, int64_t cols, void* buffer,
                        Acts* acts);

}  // namespace ridge::kernels
