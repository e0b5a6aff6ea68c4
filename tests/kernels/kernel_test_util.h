// Random weights and activations for the kernel tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/quant/quants.h"
#include "tensor/fp16.h"
#include "tensor/ggml_type.h"

namespace ridge::kernels::testing {

// A weight matrix owning its bytes, in GGUF row layout.
struct TestWeights {
  GgmlType type;
  int64_t rows;
  int64_t cols;
  uint64_t row_bytes;
  std::vector<uint8_t> bytes;
  WeightView view() const { return {type, bytes.data(), rows, cols, row_bytes}; }
};

inline TestWeights random_weights(GgmlType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  const auto& tr = traits(type);
  TestWeights w{type, rows, cols, 0, {}};
  w.row_bytes = static_cast<uint64_t>(cols / tr.block_elems) * tr.block_bytes;
  w.bytes.resize(w.row_bytes * static_cast<uint64_t>(rows));
  uint8_t* p = w.bytes.data();
  const int64_t n = rows * cols;
  auto put16 = [&](uint16_t v) {
    *p++ = static_cast<uint8_t>(v & 0xff);
    *p++ = static_cast<uint8_t>(v >> 8);
  };
  switch (type) {
    case GgmlType::kF32:
      for (int64_t k = 0; k < n; ++k) {
        const uint32_t b = f32_to_bits(val(rng));
        for (int s = 0; s < 32; s += 8) *p++ = static_cast<uint8_t>(b >> s);
      }
      break;
    case GgmlType::kF16:
      for (int64_t k = 0; k < n; ++k) put16(f32_to_fp16(val(rng)));
      break;
    case GgmlType::kBF16:
      for (int64_t k = 0; k < n; ++k) put16(f32_to_bf16(val(rng)));
      break;
    case GgmlType::kQ8_0: {
      std::uniform_int_distribution<int> q(-128, 127);  // -128 too: valid in GGUF files
      std::uniform_real_distribution<float> d(0.001f, 0.02f);
      for (int64_t b = 0; b < n / 32; ++b) {
        put16(f32_to_fp16(d(rng)));
        for (int k = 0; k < 32; ++k) *p++ = static_cast<uint8_t>(static_cast<int8_t>(q(rng)));
      }
      break;
    }
    default: {  // the block formats: quantize random floats row by row (kernels/quant)
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = 0; r < rows; ++r) {
        for (auto& v : row) v = val(rng);
        quantize_row(type, row.data(), w.bytes.data() + r * w.row_bytes, cols);
      }
      break;
    }
  }
  return w;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> val(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = val(rng);
  return v;
}

}  // namespace ridge::kernels::testing
