// AVX2 attention loops (see attention_kernels.h): K/V rows are converted 8 values at a time
// in registers (f16: vcvtph2ps (F16C), bf16: shift, q8_0: int8 -> f32 times the block scale, which is
// exactly the dequantized value) and used at once by up to 4 queries; several K rows per pass,
// V sums held in registers over the rows.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kv/kv_cache.h"
#include "backend/cpu/attention_kernels.h"
#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/simd_math.h"
#include "backend/cpu/x86_avx2/vec8.h"

namespace ridge::backend::cpu {
namespace {

// Values [i, i + 8) of a row (i a multiple of 8) as f32.
template <kv::KvType T>
inline __m256 load8(const uint8_t* row, int64_t i) {
  if constexpr (T == kv::KvType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else if constexpr (T == kv::KvType::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
  } else if constexpr (T == kv::KvType::kBF16) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else {
    const uint8_t* blk = row + i / kv::kQ8Block * kv::kQ8BlockBytes;
    uint16_t dh;
    std::memcpy(&dh, blk, 2);
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + i % kv::kQ8Block));
    return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(dh)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
  }
}

// The vector operations attention_tiles.h runs on: 8 lanes.
struct Avx2 : Vec8 {
  static constexpr int kQkRows = 2;
  static constexpr int kPvCols = 2;
  template <kv::KvType T>
  static Reg load(const uint8_t* row, int64_t i) { return load8<T>(row, i); }
  static constexpr int kSumBatch = 0;
  template <int R>
  static void sum_batch(const Reg*, float, float*, int64_t) {}
};

void softmax8(float* x, int64_t n) { softmax_lanes<Vec8>(x, n); }

}  // namespace

const AttnKernels& attn_kernels_avx2() {
  static const AttnKernels k{qk_simd<Avx2>, pv_simd<Avx2>, softmax8};
  return k;
}

}  // namespace ridge::backend::cpu
