// The grid formats (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, TQ1_0, TQ2_0) against
// llama.cpp's own block code (the peer's ggml libraries; skipped when not installed):
//  - ridge decodes random blocks to the bits of ggml's dequantize_row_*;
//  - ridge's reference dot with Q8_K activations equals ggml_vec_dot_*_q8_K of the peer's baseline
//    x86-64 CPU library (its scalar loops) bit for bit, on one super-block and on whole rows;
//  - every ISA's matmul gives the reference's bits (decode and prefill sizes).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/ggml_peer.h"
#include "kernels/quant/act_q8_k.h"
#include "kernels/quant/grid_formats.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/quant/quants.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace grid_formats_test {

// Random blocks of `type` whose fp16 scales are finite and small (IQ1_M keeps its scale in the
// top nibbles of its four 16-bit scale words).
std::vector<uint8_t> random_blocks(GgmlType type, int64_t n_blocks, std::mt19937& rng) {
  const auto& tr = traits(type);
  std::vector<uint8_t> bytes(static_cast<size_t>(n_blocks * tr.block_bytes));
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t i = 0; i < n_blocks; ++i) {
    uint8_t* blk = bytes.data() + i * tr.block_bytes;
    const uint16_t h = f32_to_fp16(nd(rng) * 0.01f);
    if (type == GgmlType::kIQ1_M) {
      for (int k = 0; k < 4; ++k) blk[49 + 2 * k] = static_cast<uint8_t>((blk[49 + 2 * k] & 0x0f) | (((h >> (4 * k)) & 15) << 4));
    } else {
      const int at = type == GgmlType::kTQ1_0 ? 52 : type == GgmlType::kTQ2_0 ? 64 : 0;
      std::memcpy(blk + at, &h, 2);
    }
  }
  return bytes;
}

bool same_bits(const float* a, const float* b, size_t n, size_t* at) {
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&a[i], &b[i], 4) != 0) {
      *at = i;
      return false;
    }
  }
  return true;
}

TEST(GridFormats, DecodeAsGgml) {
  void* lib = ggml_peer::ggml_library();
  if (lib == nullptr) GTEST_SKIP() << "llama.cpp peer not installed (../shared/peer/install.sh)";
  std::mt19937 rng(31);
  for (GgmlType type : kGridFormats) {
    const std::string name(ggml_type_name(type));
    SCOPED_TRACE(name);
    ASSERT_TRUE(can_dequantize(type));
    auto dequant = reinterpret_cast<ggml_peer::DequantizeFn>(dlsym(lib, ("dequantize_row_" + name).c_str()));
    ASSERT_NE(dequant, nullptr);
    const int64_t n_blocks = 64, n = n_blocks * kQkK;
    const std::vector<uint8_t> blocks = random_blocks(type, n_blocks, rng);
    std::vector<float> theirs(n), ours(n);
    dequant(blocks.data(), theirs.data(), n);
    dequantize_row_quant(type, blocks.data(), ours.data(), n);
    size_t at = 0;
    EXPECT_TRUE(same_bits(theirs.data(), ours.data(), theirs.size(), &at))
        << "element " << at << ": " << theirs[at] << " vs " << ours[at];
  }
}

TEST(GridFormats, DotMatchesGgmlsBitForBit) {
  void* cpu = ggml_peer::ggml_cpu_baseline();
  if (cpu == nullptr) GTEST_SKIP() << "llama.cpp peer not installed (../shared/peer/install.sh)";
  std::mt19937 rng(32);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t rows = 13, nb = 12, cols = nb * kQkK, m = 3;
  // Activations as ridge quantizes them, and as ggml's block_q8_K (f32 d, 256 qs, 16 bsums).
  std::vector<float> x(static_cast<size_t>(m * cols));
  for (float& v : x) v = nd(rng);
  std::vector<int8_t> qs(x.size());
  std::vector<float> d(static_cast<size_t>(m * nb));
  std::vector<int16_t> bsums(static_cast<size_t>(m * nb * 16));
  for (int64_t i = 0; i < m; ++i) {
    quantize_act_row_q8_k(x.data() + i * cols, cols, qs.data() + i * cols, d.data() + i * nb, bsums.data() + i * nb * 16);
  }
  std::vector<BlockQ8_K> q8k(static_cast<size_t>(m * nb));
  for (int64_t b = 0; b < m * nb; ++b) {
    q8k[b].d = d[b];
    std::memcpy(q8k[b].qs, &qs[b * kQkK], kQkK);
    std::memcpy(q8k[b].bsums, &bsums[b * 16], 32);
  }
  Acts acts;
  acts.m = m;
  acts.cols = cols;
  acts.q8_qs = qs.data();
  acts.q8k_d = d.data();
  acts.q8k_bsums = bsums.data();
  for (GgmlType type : kGridFormats) {
    const std::string name(ggml_type_name(type));
    SCOPED_TRACE(name);
    auto dot = reinterpret_cast<ggml_peer::VecDotFn>(dlsym(cpu, ("ggml_vec_dot_" + name + "_q8_K").c_str()));
    ASSERT_NE(dot, nullptr);
    const uint64_t block_bytes = traits(type).block_bytes, row_bytes = nb * block_bytes;
    const std::vector<uint8_t> w = random_blocks(type, rows * nb, rng);
    const WeightView view{type, w.data(), rows, cols, row_bytes};
    std::vector<float> ref(static_cast<size_t>(m * rows));
    quant_ref::grid_rows(type)(view, acts, 0, rows, ref.data(), rows);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < rows; ++j) {
        float s = NAN;
        dot(static_cast<int>(cols), &s, 0, w.data() + j * row_bytes, 0, &q8k[i * nb], 0, 1);
        ASSERT_EQ(std::memcmp(&s, &ref[i * rows + j], 4), 0) << "x " << i << " row " << j << ": " << s << " vs " << ref[i * rows + j];
        // One super-block: a single rounding.
        Acts one = acts;
        one.m = 1;
        one.cols = kQkK;
        one.q8_qs = qs.data() + i * cols;
        one.q8k_d = d.data() + i * nb;
        one.q8k_bsums = bsums.data() + i * nb * 16;
        float ours = NAN;
        quant_ref::grid_rows(type)({type, w.data() + j * row_bytes, 1, kQkK, block_bytes}, one, 0, 1, &ours, 1);
        dot(kQkK, &s, 0, w.data() + j * row_bytes, 0, &q8k[i * nb], 0, 1);
        ASSERT_EQ(std::memcmp(&s, &ours, 4), 0) << "x " << i << " row " << j << " first block: " << s << " vs " << ours;
      }
    }
  }
}

TEST(GridFormats, EveryIsaGivesTheReferenceBits) {
  std::mt19937 rng(33);
  const int64_t rows = 21, nb = 4, cols = nb * kQkK;
  for (GgmlType type : kGridFormats) {
    SCOPED_TRACE(std::string(ggml_type_name(type)));
    const std::vector<uint8_t> w = random_blocks(type, rows * nb, rng);
    const WeightView view{type, w.data(), rows, cols, static_cast<uint64_t>(nb) * traits(type).block_bytes};
    for (int64_t m : {1, 3, 40}) ggml_peer::expect_isas_give_reference_bits(view, m, rng);
  }
}

}  // namespace grid_formats_test
}  // namespace ridge::kernels
