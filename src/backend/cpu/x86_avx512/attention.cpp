// AVX-512 attention loops (see attention_kernels.h): K/V rows are converted 16 values at a time
// in registers (f16: vcvtph2ps, bf16: shift, q8_0: int8 -> f32 times the block scale, which is
// exactly the dequantized value) and used at once by up to 4 queries; several K rows per pass,
// V sums held in registers over the rows.
// GCC 12's AVX-512 headers leave the pass-through operand of many intrinsics undefined (GCC bug
// 105593); -Wmaybe-uninitialized then fires inside our functions.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kv/kv_cache.h"
#include "backend/cpu/attention_kernels.h"
#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/simd_math.h"
#include "backend/cpu/x86_avx512/vec16.h"

namespace ridge::backend::cpu {
namespace {

// Values [i, i + 16) of a row (i a multiple of 16) as f32.
template <kv::KvType T>
inline __m512 load16(const uint8_t* row, int64_t i) {
  if constexpr (T == kv::KvType::kF32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else if constexpr (T == kv::KvType::kF16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * i)));
  } else if constexpr (T == kv::KvType::kBF16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else {
    const uint8_t* blk = row + i / kv::kQ8Block * kv::kQ8BlockBytes;
    uint16_t dh;
    std::memcpy(&dh, blk, 2);
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + i % kv::kQ8Block));
    return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(dh)), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
  }
}

// Every score is Vec16::hsum (quant_avx512::hsum16) of its accumulator: the two 256-bit halves,
// then the 128-bit quarters, then lanes (0 + 2, 1 + 3), then those two. sum16 below follows the
// same pairs, so the two agree bit for bit (IEEE addition is commutative, only the pairing
// matters).
//
// The 16 sums hsum16(r[k]) * scale, stored R per query: out[(k / R) * ld + k % R] (R = 4, 8 or
// 16). Each level reduces two registers into one, halving the width per register: 16 x 16 lanes
// to 1 x 16.
template <int R>
inline void sum16(const __m512* r, float scale, float* out, int64_t ld) {
  __m512 p[8], q[4], s[2];
  for (int k = 0; k < 8; ++k) {  // 256-bit halves: lanes 0-7 reg 2k, 8-15 reg 2k + 1
    p[k] = _mm512_add_ps(_mm512_shuffle_f32x4(r[2 * k], r[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(r[2 * k], r[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  for (int k = 0; k < 4; ++k) {  // 128-bit quarters: 128-bit lane j = reg 4k + j
    q[k] = _mm512_add_ps(_mm512_shuffle_f32x4(p[2 * k], p[2 * k + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(p[2 * k], p[2 * k + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
  for (int k = 0; k < 2; ++k) {  // lanes 0 + 2, 1 + 3 in each 128-bit lane j: regs 8k + j, 8k + 4 + j
    s[k] = _mm512_add_ps(_mm512_shuffle_ps(q[2 * k], q[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(q[2 * k], q[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  // Last pair; lane 4j + e then holds reg 4e + j: transpose to lane k = reg k.
  const __m512 t = _mm512_add_ps(_mm512_shuffle_ps(s[0], s[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_ps(s[0], s[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i to_reg = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512 v = _mm512_mul_ps(_mm512_permutexvar_ps(to_reg, t), _mm512_set1_ps(scale));
  if constexpr (R == 16) {
    _mm512_storeu_ps(out, v);
  } else if constexpr (R == 8) {
    _mm256_storeu_ps(out, _mm512_castps512_ps256(v));
    _mm256_storeu_ps(out + ld, _mm512_extractf32x8_ps(v, 1));
  } else {
    static_assert(R == 4);
    _mm_storeu_ps(out, _mm512_castps512_ps128(v));
    _mm_storeu_ps(out + ld, _mm512_extractf32x4_ps(v, 1));
    _mm_storeu_ps(out + 2 * ld, _mm512_extractf32x4_ps(v, 2));
    _mm_storeu_ps(out + 3 * ld, _mm512_extractf32x4_ps(v, 3));
  }
}

// The vector operations attention_tiles.h runs on: 16 lanes.
struct Avx512 : Vec16 {
  static constexpr int kQkRows = 4;
  static constexpr int kPvCols = 4;
  template <kv::KvType T>
  static Reg load(const uint8_t* row, int64_t i) { return load16<T>(row, i); }
  static constexpr int kSumBatch = 16;
  template <int R>
  static void sum_batch(const Reg* r, float scale, float* out, int64_t ld) { sum16<R>(r, scale, out, ld); }
};

void softmax16(float* x, int64_t n) { softmax_lanes<Vec16>(x, n); }

}  // namespace

const AttnKernels& attn_kernels_avx512() {
  static const AttnKernels k{qk_simd<Avx512>, pv_simd<Avx512>, softmax16};
  return k;
}

}  // namespace ridge::backend::cpu
