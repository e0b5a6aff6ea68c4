// Cross-check against llama.cpp's own block code: the ggml library of the installed peer
// (../shared/peer/install.sh puts node-llama-cpp's prebuilt libggml-base.so under
// ~/.cache/llamacpp-peer). Skipped when it is not installed.
//  - llama.cpp's dequantize_row_* and ridge's dequantize_row_quant give the same bits on random
//    blocks (decoding is bit-exact both ways: files from either side read the same);
//  - llama.cpp decodes ridge's quantized blocks to what ridge decodes;
//  - on the same Gaussian data ridge's quantizer is at least as accurate as quantize_row_*_ref.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/quant/quants.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

using DequantizeFn = void (*)(const void*, float*, int64_t);
using QuantizeFn = void (*)(const float*, void*, int64_t);

void* ggml_library() {
  static void* handle = [] () -> void* {
    const char* home = std::getenv("HOME");
    if (home == nullptr) return nullptr;
    const std::string path = std::string(home) +
        "/.cache/llamacpp-peer/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so";
    return dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }();
  return handle;
}

struct Format {
  GgmlType type;
  const char* ggml_name;
  std::vector<int> f16_offsets;  // fp16 fields of a block, made finite in the random blocks
};

const Format kFormats[] = {
    {GgmlType::kQ4_0, "q4_0", {0}},     {GgmlType::kQ4_1, "q4_1", {0, 2}},
    {GgmlType::kQ5_0, "q5_0", {0}},     {GgmlType::kQ5_1, "q5_1", {0, 2}},
    {GgmlType::kQ8_0, "q8_0", {0}},     {GgmlType::kQ2_K, "q2_K", {80, 82}},
    {GgmlType::kQ3_K, "q3_K", {108}},   {GgmlType::kQ4_K, "q4_K", {0, 2}},
    {GgmlType::kQ5_K, "q5_K", {0, 2}},  {GgmlType::kQ6_K, "q6_K", {208}},
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b, size_t* first_diff) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], 4) != 0) {
      *first_diff = i;
      return false;
    }
  }
  return true;
}

TEST(QuantLlamaCpp, DecodingAndQuantizationMatchGgml) {
  void* lib = ggml_library();
  if (lib == nullptr) GTEST_SKIP() << "llama.cpp peer not installed (../shared/peer/install.sh)";
  std::mt19937 rng(2024);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t rows = 8, cols = 4096, n = rows * cols;
  std::vector<float> x(n);
  for (auto& v : x) v = nd(rng);
  for (const Format& f : kFormats) {
    SCOPED_TRACE(f.ggml_name);
    auto dequant = reinterpret_cast<DequantizeFn>(dlsym(lib, (std::string("dequantize_row_") + f.ggml_name).c_str()));
    auto quant = reinterpret_cast<QuantizeFn>(dlsym(lib, (std::string("quantize_row_") + f.ggml_name + "_ref").c_str()));
    ASSERT_NE(dequant, nullptr);
    ASSERT_NE(quant, nullptr);
    const auto& tr = traits(f.type);
    const size_t n_bytes = static_cast<size_t>(n / tr.block_elems * tr.block_bytes);
    // random blocks with finite scales
    std::vector<uint8_t> blocks(n_bytes);
    for (auto& b : blocks) b = static_cast<uint8_t>(rng());
    for (size_t blk = 0; blk < n_bytes / tr.block_bytes; ++blk) {
      for (int off : f.f16_offsets) {
        const uint16_t h = f32_to_fp16(nd(rng) * 0.01f);
        std::memcpy(&blocks[blk * tr.block_bytes + off], &h, 2);
      }
    }
    std::vector<float> theirs(n), ours(n);
    size_t at = 0;
    dequant(blocks.data(), theirs.data(), n);
    dequantize_row_quant(f.type, blocks.data(), ours.data(), n);
    EXPECT_TRUE(same_bits(theirs, ours, &at)) << "element " << at << ": " << theirs[at] << " vs " << ours[at];
    // ridge's blocks through llama.cpp's decoder, and the accuracy of both quantizers
    std::vector<uint8_t> q_ours(n_bytes), q_theirs(n_bytes);
    const int64_t row_bytes = cols / tr.block_elems * tr.block_bytes;
    for (int64_t r = 0; r < rows; ++r) quantize_row(f.type, x.data() + r * cols, q_ours.data() + r * row_bytes, cols);
    quant(x.data(), q_theirs.data(), n);
    dequant(q_ours.data(), theirs.data(), n);
    dequantize_row_quant(f.type, q_ours.data(), ours.data(), n);
    EXPECT_TRUE(same_bits(theirs, ours, &at)) << "element " << at;
    std::vector<float> ref_decoded(n);
    dequant(q_theirs.data(), ref_decoded.data(), n);
    double e_ours = 0.0, e_ref = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      e_ours += (ours[i] - x[i]) * double(ours[i] - x[i]);
      e_ref += (ref_decoded[i] - x[i]) * double(ref_decoded[i] - x[i]);
    }
    EXPECT_LE(std::sqrt(e_ours / n), std::sqrt(e_ref / n) * 1.01);
  }
}

}  // namespace
}  // namespace ridge::kernels
