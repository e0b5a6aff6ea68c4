// The read and copy loops of `ridge probe`, written once over a vector type V and instantiated
// by each ISA's file (x86_avx2/, x86_avx512/), which is compiled with that ISA's flags. Private
// to those files.
//
// V provides: type `Vec`, kFloats (floats per register), zero(), load(const float*) (aligned),
// add(Vec, Vec), store(float*, Vec), stream(float*, Vec), hsum(Vec).
#pragma once

#include <immintrin.h>

#include "analysis/probe_kernels.h"

namespace ridge::analysis::probe_kernels::detail {
// Internal linkage: each ISA file gets its own copy, compiled with its own flags.
namespace {

inline void prefetch_l2(const float* p, size_t bytes_ahead) {
  _mm_prefetch(reinterpret_cast<const char*>(p) + bytes_ahead, _MM_HINT_T1);
}
inline void prefetch_l1(const float* p, size_t bytes_ahead) {
  _mm_prefetch(reinterpret_cast<const char*>(p) + bytes_ahead, _MM_HINT_T0);
}

// S streams, each a contiguous 1/S of p[0, n), read interleaved one 256-byte step at a time,
// with kAcc independent accumulators per stream (enough to keep loads, not adds, the limit).
template <typename V, int S, bool kPrefetch>
float read_streams(const float* p, size_t n, size_t ahead, size_t l1_ahead) {
  constexpr int kLoads = static_cast<int>(kMemStep / V::kFloats);  // loads per step per stream
  // At most 16 accumulator registers in all (AVX2 has 16 ymm, AVX-512 32 zmm).
  constexpr int kAccMax = 16 / S < 4 ? 16 / S : 4;
  constexpr int kAcc = kLoads < kAccMax ? kLoads : kAccMax;
  const size_t len = n / S;
  typename V::Vec acc[S][kAcc];
  for (auto& a : acc) {
    for (auto& v : a) v = V::zero();
  }
  for (size_t i = 0; i < len; i += kMemStep) {
    for (int s = 0; s < S; ++s) {
      const float* x = p + static_cast<size_t>(s) * len + i;
      if constexpr (kPrefetch) {
        for (size_t line = 0; line < kMemStep; line += 16) prefetch_l2(x + line, ahead);
        if (l1_ahead > 0) {  // after the L2 lines, as the decode kernels' prefetch_stream
          for (size_t line = 0; line < kMemStep; line += 16) prefetch_l1(x + line, l1_ahead);
        }
      }
      for (int k = 0; k < kLoads; ++k) {
        acc[s][k % kAcc] = V::add(acc[s][k % kAcc], V::load(x + k * V::kFloats));
      }
    }
  }
  typename V::Vec t = V::zero();
  for (auto& a : acc) {
    for (auto& v : a) t = V::add(t, v);
  }
  return V::hsum(t);
}

template <typename V, bool kPrefetch, bool kStream>
void copy_loop(float* dst, const float* src, size_t n, size_t ahead) {
  for (size_t i = 0; i < n; i += kMemStep) {
    if constexpr (kPrefetch) {
      for (size_t line = 0; line < kMemStep; line += 16) prefetch_l2(src + i + line, ahead);
    }
    for (size_t j = 0; j < kMemStep; j += V::kFloats) {
      if constexpr (kStream) {
        V::stream(dst + i + j, V::load(src + i + j));
      } else {
        V::store(dst + i + j, V::load(src + i + j));
      }
    }
  }
  if constexpr (kStream) _mm_sfence();  // streaming stores are weakly ordered
}

template <typename V, int S>
float read_prefetch_or_not(const float* p, size_t n, const MemLoop& loop) {
  return loop.prefetch_bytes > 0 ? read_streams<V, S, true>(p, n, loop.prefetch_bytes, loop.l1_bytes)
                                 : read_streams<V, S, false>(p, n, 0, 0);
}

template <typename V>
float read_sum(const float* p, size_t n, const MemLoop& loop) {
  switch (loop.n_streams) {
    case 8: return read_prefetch_or_not<V, 8>(p, n, loop);
    case 4: return read_prefetch_or_not<V, 4>(p, n, loop);
    case 2: return read_prefetch_or_not<V, 2>(p, n, loop);
    default: return read_prefetch_or_not<V, 1>(p, n, loop);
  }
}

template <typename V>
void copy(float* dst, const float* src, size_t n, const MemLoop& loop) {
  const size_t a = loop.prefetch_bytes;
  if (loop.nontemporal) {
    a > 0 ? copy_loop<V, true, true>(dst, src, n, a) : copy_loop<V, false, true>(dst, src, n, 0);
  } else {
    a > 0 ? copy_loop<V, true, false>(dst, src, n, a) : copy_loop<V, false, false>(dst, src, n, 0);
  }
}

}  // namespace
}  // namespace ridge::analysis::probe_kernels::detail
