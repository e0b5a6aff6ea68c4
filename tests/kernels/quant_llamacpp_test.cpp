// Cross-check against llama.cpp's own block code: the ggml library of the installed peer
// (../shared/peer/install.sh puts node-llama-cpp's prebuilt libggml-base.so under
// ~/.cache/llamacpp-peer). Skipped when it is not installed.
//  - llama.cpp's dequantize_row_* and ridge's dequantize_row_quant give the same bits on random
//    blocks (decoding is bit-exact both ways: files from either side read the same);
//  - llama.cpp decodes ridge's quantized blocks to what ridge decodes;
//  - on the same Gaussian data ridge's quantizer is at least as accurate as quantize_row_*_ref.
// MXFP4 goes further (its quantizer is ggml's rule, its dot ggml's per-block formula):
//  - ridge's quantize_row writes the bytes of quantize_row_mxfp4_ref, on Gaussian data of many
//    scales and on edge blocks (zeros, ties, values just below powers of two, subnormal and
//    huge magnitudes, infinities and NaNs);
//  - ridge's reference dot equals ggml_vec_dot_mxfp4_q8_0 of the peer's baseline x86-64 CPU
//    library (libggml-cpu-x64.so: no AVX, so its scalar per-block loop, and no FMA to contract
//    it) bit for bit, on the same Q8_0 activation blocks, and so does every ISA's matmul.
// IQ4_NL's dot too (ggml_vec_dot_iq4_nl_q8_0, the same per-block rule with a fp16 scale); its
// blocks decode as ggml's, and ridge's own quantizer is at least as accurate as ggml's.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/ggml_peer.h"
#include "kernels/kernels.h"
#include "kernels/matmul_driver.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/quant/quants.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

using ggml_peer::DequantizeFn;
using ggml_peer::VecDotFn;
using ggml_peer::expect_isas_give_reference_bits;
using ggml_peer::ggml_cpu_baseline;
using ggml_peer::ggml_library;
using QuantizeFn = void (*)(const float*, void*, int64_t);

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
    {GgmlType::kMXFP4, "mxfp4", {}},  // every E8M0 byte decodes (255: 2^127 halved scale)
    {GgmlType::kIQ4_NL, "iq4_nl", {0}},    {GgmlType::kIQ4_XS, "iq4_xs", {0}},
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

// Rows of 32 * k floats (k whole blocks) that probe quantize_row_mxfp4_ref's edges, one block each.
std::vector<float> mxfp4_edge_blocks() {
  std::vector<float> x;
  std::mt19937 rng(77);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto block = [&](float amax_target, auto&& fill) {
    std::vector<float> b(32);
    for (int k = 0; k < 32; ++k) b[k] = nd(rng) * amax_target / 3.0f;
    fill(b);
    x.insert(x.end(), b.begin(), b.end());
  };
  auto none = [](std::vector<float>&) {};
  block(0.0f, none);                                                        // zeros (and -0)
  block(0.0f, [](std::vector<float>& b) { b[3] = -0.0f; });
  for (int p = -149; p <= 127; p += 3) {                                  // every octave's edges
    const float two_p = std::ldexp(1.0f, p);
    block(two_p, [&](std::vector<float>& b) { b[0] = two_p; });
    block(two_p, [&](std::vector<float>& b) { b[5] = -std::nextafter(two_p, 0.0f); });
    block(two_p, [&](std::vector<float>& b) { b[31] = std::nextafter(two_p, INFINITY); });
  }
  for (int p = -5; p <= 5; ++p) {  // ties: multiples of d / 2 for the block's own d
    block(0.0f, [&](std::vector<float>& b) {
      const float d = std::ldexp(1.0f, p);
      b[0] = 6.0f * d;
      for (int k = 1; k < 32; ++k) b[k] = static_cast<float>(k % 25 - 12) * 0.25f * d;
    });
  }
  block(1.0f, [](std::vector<float>& b) { b[7] = FLT_MAX; b[8] = -FLT_MAX / 3; });
  block(1.0f, [](std::vector<float>& b) { b[2] = INFINITY; });
  block(1.0f, [](std::vector<float>& b) { b[2] = NAN; b[9] = -INFINITY; });
  block(1.0f, [](std::vector<float>& b) { for (float& v : b) v = NAN; });
  return x;
}

TEST(QuantLlamaCpp, Mxfp4QuantizerWritesGgmlsBytes) {
  void* lib = ggml_library();
  if (lib == nullptr) GTEST_SKIP() << "llama.cpp peer not installed (../shared/peer/install.sh)";
  auto quant = reinterpret_cast<QuantizeFn>(dlsym(lib, "quantize_row_mxfp4_ref"));
  ASSERT_NE(quant, nullptr);
  std::mt19937 rng(31);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x;
  for (float scale : {1.0f, 1e-3f, 37.0f, 1e-30f, 1e30f, 1e-38f}) {
    for (int k = 0; k < 8 * 4096; ++k) x.push_back(nd(rng) * scale);
  }
  const auto edges = mxfp4_edge_blocks();
  x.insert(x.end(), edges.begin(), edges.end());
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> ours(static_cast<size_t>(n / 32 * 17)), theirs(ours.size(), 0xee);
  quantize_row(GgmlType::kMXFP4, x.data(), ours.data(), n);
  quant(x.data(), theirs.data(), n);
  for (size_t b = 0; b < ours.size() / 17; ++b) {
    ASSERT_EQ(std::memcmp(&ours[17 * b], &theirs[17 * b], 17), 0)
        << "block " << b << " (e " << int(ours[17 * b]) << " vs " << int(theirs[17 * b]) << ")";
  }
}

// ridge's reference dot against ggml's `names` (of the baseline CPU library) on the weight rows
// w ([rows, nb blocks of block_bytes]), for m = 3 activation rows whose signs follow `sign` per
// column, with one block (a single rounding) and whole rows; then every ISA's matmul.
void expect_dot_matches_ggml(void* cpu, GgmlType type, int64_t block_bytes, const std::vector<uint8_t>& w,
                             int64_t rows, int64_t nb, const std::vector<int>& sign,
                             std::initializer_list<const char*> names, QuantRows* ref_rows, std::mt19937& rng) {
  const int64_t cols = 32 * nb, m = 3;
  std::vector<float> x(static_cast<size_t>(m * cols));
  std::uniform_real_distribution<float> mag(0.5f, 1.0f);  // q mostly 64-127: isum ~ 2^14
  for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(sign[k % cols]) * mag(rng);
  // The activations as ridge quantizes them, also as ggml's block_q8_0 (fp16 d, 32 int8).
  std::vector<int8_t> qs(x.size());
  std::vector<float> d(static_cast<size_t>(m * nb));
  std::vector<int32_t> sums(d.size());
  std::vector<uint8_t> q8(static_cast<size_t>(m * nb * 34));
  for (int64_t i = 0; i < m; ++i) {
    quantize_act_row_q8_0(x.data() + i * cols, cols, qs.data() + i * cols, d.data() + i * nb, sums.data() + i * nb);
  }
  for (int64_t b = 0; b < m * nb; ++b) {
    const uint16_t h = f32_to_fp16(d[b]);  // exact: d is an fp16 value
    std::memcpy(&q8[34 * b], &h, 2);
    std::memcpy(&q8[34 * b + 2], &qs[32 * b], 32);
  }
  Acts acts;
  acts.m = m;
  acts.cols = cols;
  acts.q8_qs = qs.data();
  acts.q8_d = d.data();
  acts.q8_sum = sums.data();
  const WeightView view{type, w.data(), rows, cols, static_cast<uint64_t>(nb * block_bytes)};
  std::vector<float> ref(static_cast<size_t>(m * rows));
  ref_rows(view, acts, 0, rows, ref.data(), rows);
  for (const char* name : names) {
    SCOPED_TRACE(name);
    auto dot = reinterpret_cast<VecDotFn>(dlsym(cpu, name));
    ASSERT_NE(dot, nullptr);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < rows; ++j) {
        for (int64_t n_blocks : {int64_t{1}, nb}) {  // one block (a single rounding) and the row
          float s = NAN;
          dot(static_cast<int>(32 * n_blocks), &s, 0, w.data() + j * view.row_bytes, 0, q8.data() + 34 * i * nb, 0, 1);
          float ours = ref[i * rows + j];
          if (n_blocks == 1) {
            Acts one = acts;
            one.cols = 32;
            one.m = 1;
            one.q8_qs = qs.data() + i * cols;
            one.q8_d = d.data() + i * nb;
            one.q8_sum = sums.data() + i * nb;
            const WeightView first{type, w.data() + j * view.row_bytes, 1, 32, static_cast<uint64_t>(block_bytes)};
            ref_rows(first, one, 0, 1, &ours, 1);
          }
          uint32_t a, b;
          std::memcpy(&a, &s, 4);
          std::memcpy(&b, &ours, 4);
          ASSERT_EQ(a, b) << "x " << i << " row " << j << " blocks " << n_blocks << ": " << s << " vs " << ours;
        }
      }
    }
  }
  // Every ISA's matmul (its own activation quantizer, the same bytes) gives those bits too.
  for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    ThreadPool pool(2);
    std::vector<float> y(ref.size(), NAN);
    kernels_for(isa).matmul(view, x.data(), cols, m, y.data(), rows, pool);
    EXPECT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0) << isa_name(isa);
  }
}



TEST(QuantLlamaCpp, Mxfp4DotMatchesGgmlsBitForBit) {
  void* cpu = ggml_cpu_baseline();
  if (cpu == nullptr) GTEST_SKIP() << "llama.cpp peer not installed (../shared/peer/install.sh)";
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> byte(0, 255), exps(110, 135), magnitude(1, 7);
  const int64_t rows = 21, nb = 90, cols = 32 * nb;
  // x's signs follow one pattern per column; the odd weight rows take those signs with large
  // magnitudes, so their block dots are large and d * isum is often inexact in f32 (an fma in
  // place of ggml's rounded product would show).
  std::vector<int> sign(static_cast<size_t>(cols));
  for (auto& s : sign) s = rng() % 2 ? 1 : -1;
  std::vector<uint8_t> w(static_cast<size_t>(rows * nb * 17));
  for (int64_t j = 0; j < rows; ++j) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* blk = &w[static_cast<size_t>((j * nb + b) * 17)];
      blk[0] = static_cast<uint8_t>(b % 7 == 0 ? byte(rng) % 4 : exps(rng));  // some subnormal scales
      for (int k = 0; k < 16; ++k) {
        auto code = [&](int64_t col) { return magnitude(rng) | (sign[col] < 0 ? 8 : 0); };
        blk[1 + k] = static_cast<uint8_t>(j % 2 == 0 ? byte(rng) : code(32 * b + k) | (code(32 * b + k + 16) << 4));
      }
    }
  }
  expect_dot_matches_ggml(cpu, GgmlType::kMXFP4, 17, w, rows, nb, sign,
                          {"ggml_vec_dot_mxfp4_q8_0", "ggml_vec_dot_mxfp4_q8_0_generic"}, quant_ref::rows_mxfp4, rng);
}

// IQ4_NL: random fp16 scales; the odd rows' indices pick table values of x's sign (indices 0-7
// negative, 8-15 positive), large ones, so that d * isum is often inexact.
TEST(QuantLlamaCpp, Iq4NlDotMatchesGgmlsBitForBit) {
  void* cpu = ggml_cpu_baseline();
  if (cpu == nullptr) GTEST_SKIP() << "llama.cpp peer not installed (../shared/peer/install.sh)";
  std::mt19937 rng(13);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255), big(0, 2);
  const int64_t rows = 21, nb = 90, cols = 32 * nb;
  std::vector<int> sign(static_cast<size_t>(cols));
  for (auto& s : sign) s = rng() % 2 ? 1 : -1;
  std::vector<uint8_t> w(static_cast<size_t>(rows * nb * 18));
  for (int64_t j = 0; j < rows; ++j) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* blk = &w[static_cast<size_t>((j * nb + b) * 18)];
      const uint16_t h = f32_to_fp16(nd(rng) * 0.02f);
      std::memcpy(blk, &h, 2);
      for (int k = 0; k < 16; ++k) {
        auto code = [&](int64_t col) { return sign[col] < 0 ? big(rng) : 15 - big(rng); };
        blk[2 + k] = static_cast<uint8_t>(j % 2 == 0 ? byte(rng) : code(32 * b + k) | (code(32 * b + k + 16) << 4));
      }
    }
  }
  expect_dot_matches_ggml(cpu, GgmlType::kIQ4_NL, 18, w, rows, nb, sign,
                          {"ggml_vec_dot_iq4_nl_q8_0", "ggml_vec_dot_iq4_nl_q8_0_generic"}, quant_ref::rows_iq4_nl, rng);
  // Prefill-sized m (AVX2's packed panels, AVX-512's packed path): the reference's bits too.
  expect_isas_give_reference_bits({GgmlType::kIQ4_NL, w.data(), rows, cols, static_cast<uint64_t>(nb * 18)}, 40, rng);
}

// IQ4_XS on every ISA: the reference's bits, decode and prefill sizes, ragged panels (its dot
// against ggml is covered through the peer's probabilities, tests/offline/synthetic_peer_test.cpp).
TEST(QuantIsa, Iq4XsGivesTheReferenceBits) {
  std::mt19937 rng(21);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t rows = 21, cols = 1024;
  std::vector<float> wf(static_cast<size_t>(rows * cols));
  for (float& v : wf) v = nd(rng);
  const uint64_t row_bytes = cols / 256 * 136;
  std::vector<uint8_t> w(rows * row_bytes);
  for (int64_t j = 0; j < rows; ++j) quantize_row(GgmlType::kIQ4_XS, wf.data() + j * cols, w.data() + j * row_bytes, cols);
  for (int64_t m : {1, 3, 40}) expect_isas_give_reference_bits({GgmlType::kIQ4_XS, w.data(), rows, cols, row_bytes}, m, rng);
}

}  // namespace
}  // namespace ridge::kernels
