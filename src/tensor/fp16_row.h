// Whole rows of f32 to IEEE half: what the f16 KV write, `ridge quantize` and `ridge synth` store.
#pragma once

#include <cstdint>

namespace ridge {

// dst[i] = f32_to_fp16(src[i]) for i < n, dst any alignment. Where the CPU has F16C, 8 values per
// vcvtps2ph (round to nearest even, the same bits); a group of 8 holding a NaN goes through
// f32_to_fp16, whose NaN drops the payload where vcvtps2ph keeps it.
void f32_to_fp16_row(const float* src, void* dst, int64_t n);

}  // namespace ridge
