// Inner loops of `ridge probe`, one set per ISA (x86_avx2/, x86_avx512/, compiled with only that
// ISA's flags). Callers check cpu_features() before calling a set.
//
// Memory loops: the probe must report the best read rate this machine sustains, or ridge's own
// kernels (which read several weight rows at once and prefetch the next panel into L2) come out
// above "100% of measured bandwidth". So the read loop comes in variants: 1, 2, 4 or 8 concurrent
// streams per thread (each stream a contiguous 1/S of the thread's slice, read
// interleaved, full-width aligned loads into independent accumulators), with or without a
// software prefetch into L2 (`prefetcht1`) a given distance ahead of every stream. The probe
// times each variant and keeps the best. Copy likewise: plain or non-temporal stores, with or
// without prefetch of the source.
//
// Compute loops run independent accumulator chains of the instruction ridge's kernels use, enough
// chains to hide latency; each returns a value that depends on every instruction so nothing can
// be optimized away.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ridge::analysis::probe_kernels {

// Elements per step of one stream of the memory loops (64 floats = 256 bytes, 4 cache lines).
inline constexpr size_t kMemStep = 64;
// Most streams a read loop splits its range into: n must be a multiple of kMemStep * kMaxStreams.
inline constexpr int kMaxStreams = 8;

// One variant of the read or copy loop.
struct MemLoop {
  int n_streams = 1;          // read: 1, 2, 4 or 8 concurrent streams (copy: 1)
  size_t prefetch_bytes = 0;  // 0: no software prefetch; else prefetcht1 this far ahead
  bool nontemporal = false;   // copy: streaming stores (bypass the cache, no read-for-ownership)
  size_t l1_bytes = 0;        // read, with prefetch_bytes: also prefetcht0 this far ahead (0: no)
};

// Operations done by one iteration of each compute loop (multiply and add count as 2).
inline constexpr double kFmaFlopsAvx2 = 12 * 8 * 2;      // 12 chains of vfmadd ymm
inline constexpr double kInt8OpsAvx2 = 8 * 32 * 2;       // 8 chains of vpmaddubsw ymm (+madd/add)
inline constexpr double kFmaFlopsAvx512 = 12 * 16 * 2;   // 12 chains of vfmadd zmm
inline constexpr double kInt8OpsAvx512 = 12 * 64 * 2;    // 12 chains of vpdpbusd zmm (VNNI)
inline constexpr double kBf16FlopsAvx512 = 12 * 32 * 2;  // 12 chains of vdpbf16ps zmm

// read_sum: sum of p[0, n) (64-byte aligned). copy: dst[0, n) = src[0, n) (both 64-byte aligned).
namespace avx2 {
float read_sum(const float* p, size_t n, const MemLoop& loop);
void copy(float* dst, const float* src, size_t n, const MemLoop& loop);
float fma_loop(int64_t iters);
int32_t int8_loop(int64_t iters);
}  // namespace avx2

namespace avx512 {
float read_sum(const float* p, size_t n, const MemLoop& loop);
void copy(float* dst, const float* src, size_t n, const MemLoop& loop);
float fma_loop(int64_t iters);
int32_t int8_loop(int64_t iters);   // needs avx512vnni
float bf16_loop(int64_t iters);     // needs avx512bf16
}  // namespace avx512

// Portable fallbacks (any x86-64): what the compiler makes of plain loops (+ __builtin_prefetch).
namespace generic {
float read_sum(const float* p, size_t n, const MemLoop& loop);
void copy(float* dst, const float* src, size_t n, const MemLoop& loop);
}  // namespace generic

}  // namespace ridge::analysis::probe_kernels
