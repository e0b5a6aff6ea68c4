// Inner loops of `ridge probe`, one set per ISA (x86_avx2/, x86_avx512/, compiled with only that
// ISA's flags). Callers check cpu_features() before calling a set.
//
// Memory loops use plain vector loads and stores (no non-temporal hints, no prefetch): the
// bandwidth ridge's own kernels can see. Compute loops run independent accumulator chains of the
// instruction ridge's kernels use, enough chains to hide latency; each returns a value that
// depends on every instruction so nothing can be optimized away.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ridge::analysis::probe_kernels {

// Elements per step of the memory loops: n must be a multiple (64 floats = 256 bytes).
inline constexpr size_t kMemStep = 64;

// Operations done by one iteration of each compute loop (multiply and add count as 2).
inline constexpr double kFmaFlopsAvx2 = 12 * 8 * 2;      // 12 chains of vfmadd ymm
inline constexpr double kInt8OpsAvx2 = 8 * 32 * 2;       // 8 chains of vpmaddubsw ymm (+madd/add)
inline constexpr double kFmaFlopsAvx512 = 12 * 16 * 2;   // 12 chains of vfmadd zmm
inline constexpr double kInt8OpsAvx512 = 12 * 64 * 2;    // 12 chains of vpdpbusd zmm (VNNI)
inline constexpr double kBf16FlopsAvx512 = 12 * 32 * 2;  // 12 chains of vdpbf16ps zmm

namespace avx2 {
float read_sum(const float* p, size_t n);
void copy(float* dst, const float* src, size_t n);
float fma_loop(int64_t iters);
int32_t int8_loop(int64_t iters);
}  // namespace avx2

namespace avx512 {
float read_sum(const float* p, size_t n);
void copy(float* dst, const float* src, size_t n);
float fma_loop(int64_t iters);
int32_t int8_loop(int64_t iters);   // needs avx512vnni
float bf16_loop(int64_t iters);     // needs avx512bf16
}  // namespace avx512

// Portable fallbacks (any x86-64): what the compiler makes of plain loops.
namespace generic {
float read_sum(const float* p, size_t n);
void copy(float* dst, const float* src, size_t n);
}  // namespace generic

}  // namespace ridge::analysis::probe_kernels
