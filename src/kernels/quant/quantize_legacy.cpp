// Quantizers of the 32-element formats Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.
// The scale (and min) are searched on the float values, rounded to fp16 as stored, and the
// quants are then rounded against the stored values, so the block decodes as close as the
// stored scale allows.
#include <cmath>
#include <cstring>

#include "kernels/quant/blocks.h"
#include "kernels/quant/quant_search.h"
#include "kernels/quant/quantize_impl.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

using qsearch::fit_affine;
using qsearch::fit_symmetric;
using qsearch::quantize_affine;
using qsearch::quantize_symmetric;

// Stores f as fp16 and returns the value a decoder will see.
float store_fp16(float f, uint16_t* dst) {
  *dst = f32_to_fp16(f);
  return fp16_to_f32(*dst);
}

void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < kQk / 2; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
  }
}

void pack_qh(const uint8_t* q, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < kQk; ++j) qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  std::memcpy(qh_bytes, &qh, 4);
}

// Symmetric with an offset-binary store: q in [-n_neg, n_pos] is written as q + n_neg.
void quantize_symmetric_biased(const float* x, const float* w, int n_neg, int n_pos, uint16_t* d, uint8_t* q) {
  const float scale = store_fp16(fit_symmetric(x, kQk, n_neg, n_pos, w), d);
  int8_t qi[kQk];
  quantize_symmetric(x, kQk, scale, n_neg, n_pos, qi);
  for (int j = 0; j < kQk; ++j) q[j] = static_cast<uint8_t>(qi[j] + n_neg);
}

void quantize_affine_block(const float* x, const float* w, int q_max, uint16_t* d, uint16_t* m, uint8_t* q) {
  const qsearch::Affine a = fit_affine(x, kQk, q_max, false, w);
  const float scale = store_fp16(a.scale, d);
  const float offset = store_fp16(a.offset, m);
  quantize_affine(x, kQk, scale, offset, q_max, q);
}

// Q8 scale: the largest magnitude maps to 127 (never -128, so |q| fits the sign tricks of the
// integer dot kernels).
float q8_block(const float* x, uint16_t* d, int8_t* qs) {
  float amax = 0.0f;
  for (int j = 0; j < kQk; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float scale = store_fp16(amax / 127.0f, d);
  quantize_symmetric(x, kQk, scale, 127, 127, qs);
  return scale;
}

}  // namespace

void quantize_q4_0(const float* x, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t i = 0; i < nb; ++i, x += kQk) {
    uint8_t q[kQk];
    const float* wb = w != nullptr ? w + i * kQk : nullptr;
    quantize_symmetric_biased(x, wb, 8, 7, &b[i].d, q);
    pack_nibbles(q, b[i].qs);
  }
}

void quantize_q5_0(const float* x, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<BlockQ5_0*>(dst);
  for (int64_t i = 0; i < nb; ++i, x += kQk) {
    uint8_t q[kQk];
    const float* wb = w != nullptr ? w + i * kQk : nullptr;
    quantize_symmetric_biased(x, wb, 16, 15, &b[i].d, q);
    pack_nibbles(q, b[i].qs);
    pack_qh(q, b[i].qh);
  }
}

void quantize_q4_1(const float* x, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<BlockQ4_1*>(dst);
  for (int64_t i = 0; i < nb; ++i, x += kQk) {
    uint8_t q[kQk];
    const float* wb = w != nullptr ? w + i * kQk : nullptr;
    quantize_affine_block(x, wb, 15, &b[i].d, &b[i].m, q);
    pack_nibbles(q, b[i].qs);
  }
}

void quantize_q5_1(const float* x, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<BlockQ5_1*>(dst);
  for (int64_t i = 0; i < nb; ++i, x += kQk) {
    uint8_t q[kQk];
    const float* wb = w != nullptr ? w + i * kQk : nullptr;
    quantize_affine_block(x, wb, 31, &b[i].d, &b[i].m, q);
    pack_nibbles(q, b[i].qs);
    pack_qh(q, b[i].qh);
  }
}

void quantize_q8_0(const float* x, void* dst, int64_t nb) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < nb; ++i, x += kQk) q8_block(x, &b[i].d, b[i].qs);
}

void quantize_q8_1(const float* x, void* dst, int64_t nb) {
  auto* b = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < nb; ++i, x += kQk) {
    const float scale = q8_block(x, &b[i].d, b[i].qs);
    int sum = 0;
    for (int j = 0; j < kQk; ++j) sum += b[i].qs[j];
    b[i].s = f32_to_fp16(scale * static_cast<float>(sum));
  }
}

}  // namespace ridge::kernels
