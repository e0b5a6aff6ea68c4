// Test helpers shared by the tests that compare ridge's block code with llama.cpp's own: the ggml
// libraries of the installed peer (../shared/peer/install.sh puts node-llama-cpp's prebuilt
// libggml-base.so and its CPU backends under ~/.cache/llamacpp-peer), and the check that every
// SIMD ISA's matmul gives the reference table's bits.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/matmul_driver.h"

namespace ridge::kernels::ggml_peer {

// ggml's vec_dot signature (ggml-cpu): s = dot of n elements of vx and vy.
using VecDotFn = void (*)(int n, float* s, size_t bs, const void* vx, size_t bx, const void* vy,
                          size_t by, int nrc);
using DequantizeFn = void (*)(const void*, float*, int64_t);

inline void* peer_library(const char* name) {
  const char* home = std::getenv("HOME");
  if (home == nullptr) return nullptr;
  const std::string path = std::string(home) +
      "/.cache/llamacpp-peer/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/" + name;
  return dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
}

// libggml-base.so: dequantize_row_*, quantize_row_*_ref.
inline void* ggml_library() {
  static void* handle = peer_library("libggml-base.so");
  return handle;
}

// The peer's CPU backend built for baseline x86-64 (no AVX: ggml's scalar vec_dot loops, and no
// FMA to contract them), initialised; nullptr when the peer is not installed.
inline void* ggml_cpu_baseline() {
  static void* cpu = [] {
    void* handle = peer_library("libggml-cpu-x64.so");
    if (handle != nullptr) {
      auto init = reinterpret_cast<void (*)()>(dlsym(handle, "ggml_cpu_init"));
      if (init != nullptr) init();  // its fp16 table (the baseline build has no F16C)
    }
    return handle;
  }();
  return cpu;
}

// Every SIMD ISA's matmul of `view` against m random x rows: the reference table's bits.
inline void expect_isas_give_reference_bits(const WeightView& view, int64_t m, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * view.cols));
  for (float& v : x) v = nd(rng);
  ThreadPool pool(2);
  std::vector<float> ref(static_cast<size_t>(m * view.rows));
  kernels_for(Isa::kRef).matmul(view, x.data(), view.cols, m, ref.data(), view.rows, pool);
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    std::vector<float> y(ref.size(), NAN);
    kernels_for(isa).matmul(view, x.data(), view.cols, m, y.data(), view.rows, pool);
    EXPECT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0) << isa_name(isa) << " m " << m;
  }
}

}  // namespace ridge::kernels::ggml_peer
