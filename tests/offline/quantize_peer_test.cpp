// llama.cpp loads what `ridge quantize` writes, and on the same quantized file its next-token
// probabilities match ridge's: to 1e-5 at position 0 (no attention yet: every matmul and its
// activation quantization as ggml defines them) and, over all 64 positions, to 4e-2 (see below).
// Runs the peer live (node + the harness of ../shared/peer) when RIDGE_PEER names the harness,
// as scripts/test.sh exports it; skipped otherwise.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model/ops.h"
#include "quantize_test_util.h"
#include "model/test_util.h"

namespace ridge::offline {
namespace {

using model::Model;
using model::softmax;

using namespace quantize_testing;  // NOLINT(google-build-using-namespace)
namespace fs = std::filesystem;

class QuantizePeer : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* p = std::getenv("RIDGE_PEER");
    if (p == nullptr || !fs::exists(p)) GTEST_SKIP() << "RIDGE_PEER not set (scripts/test.sh sets it)";
    peer_ = p;
    dir_ = fs::temp_directory_path() / ("ridge_quantize_peer_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // Quantizes `in` to `mix`, writes it, and compares both engines on `tokens`.
  void compare(const gguf::File& in, QuantMix mix, const std::vector<int32_t>& tokens, const std::string& label,
               double all_positions_bound = 4e-2, const ImportanceMap* importance = nullptr) {
    SCOPED_TRACE(label);
    const Quantized q = quantize(in, mix, 2, {}, importance);
    ASSERT_TRUE(q.file);
    const std::string path = (dir_ / (label + ".gguf")).string();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(q.bytes.data()),
                                                static_cast<std::streamsize>(q.bytes.size()));
    std::string ids;
    for (int32_t t : tokens) ids += (ids.empty() ? "" : ",") + std::to_string(t);
    const std::string out = (dir_ / "probs.jsonl").string();
    const std::string cmd = "node " + peer_ + " probs --model " + path + " --tokens " + ids + " --top 10 >" + out +
                            " 2>" + (dir_ / "peer_err.txt").string();
    if (std::system(cmd.c_str()) != 0) {
      std::ifstream err(dir_ / "peer_err.txt");
      std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
      FAIL() << "llama.cpp could not load or run " << path << ": " << text.substr(0, 2000);
    }
    std::ifstream pin(out);
    std::vector<nlohmann::json> rows;
    for (std::string line; std::getline(pin, line);) {
      if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
    }
    ASSERT_EQ(rows.size(), tokens.size());

    auto m = Model::load(path, model::testing::test_kernels());
    ASSERT_TRUE(m.ok()) << m.status().message();
    engine::SessionOptions o;
    o.n_ctx = 256;
    o.max_outputs = static_cast<int64_t>(tokens.size());
    o.n_threads = 2;
    auto s = engine::Session::create(*m, o);
    ASSERT_TRUE(s.ok()) << s.status().message();
    auto logits = s->eval(tokens, /*all_logits=*/true);
    ASSERT_TRUE(logits.ok()) << logits.status().message();
    const int64_t n_vocab = m->config().n_vocab;
    double max_diff = 0, first_diff = 0;
    int near_ties = 0, top1_swaps = 0;
    for (size_t pos = 0; pos < tokens.size(); ++pos) {
      std::vector<float> p(logits->begin() + static_cast<int64_t>(pos) * n_vocab,
                           logits->begin() + static_cast<int64_t>(pos + 1) * n_vocab);
      softmax(p.data(), n_vocab);
      const auto& top = rows[pos].at("top");
      const int32_t best = top.at(0).at(0).get<int32_t>();
      if (model::testing::argmax(p) != best) {
        // Only a near tie in llama.cpp's own top two may swap (not seen so far).
        const double gap = top.at(0).at(1).get<double>() - top.at(1).at(1).get<double>();
        // Counted, not failed: see the bound below.
        ++(gap < 2e-3 ? near_ties : top1_swaps);
      }
      for (const auto& e : top) {
        const double d = std::fabs(p[e.at(0).get<size_t>()] - e.at(1).get<double>());
        max_diff = std::max(max_diff, d);
        if (pos == 0) first_diff = std::max(first_diff, d);
      }
    }
    std::printf("[ figures  ] %-28s max |p - p_llama.cpp| = %.2e over %zu positions, %.2e at position 0 "
                "(top-1 swaps %d, near ties %d)\n",
                label.c_str(), max_diff, tokens.size(), first_diff, top1_swaps, near_ties);
    // Position 0: measured <= 8.4e-7 on every file here and on stories260K q4_0 / q4_1; a rule
    // that differs from ggml's shows far above (Q4_1 with the min term of Q8_0 instead of ggml's
    // Q8_1: 8.1e-3 on stories260K).
    EXPECT_LE(first_diff, 1e-5);
    // All positions: measured 1e-6..3.8e-2 (q2_K worst), moving with any last-bit change in
    // ridge. Not a format error: both engines agree to 1e-6 up to some position, then differ by
    // 1e-3..1e-2 from there on. The activation
    // quantization (127 steps per block) turns any last-bit difference upstream (summation order,
    // rope angles, exp) into a whole-step difference now and then, and that difference reaches
    // every later position through the KV cache. Measured: ridge against itself with rope angles
    // computed as ggml does (no other change) moves 1.8e-2..2.1e-2 on llama q4_1 / q4_K_M (3e-5 on
    // f16); llama.cpp's own AVX2 and AVX-512 builds differ by 2.3e-2..4.1e-2 on stories260K and
    // by 2.1e-2 between 48- and 64-token batches of wide-qwen3 q8_0 (its CPU flash attention
    // accumulates V in f16 below 64 query rows, and whenever head_dim is not a multiple of the
    // SIMD width). Reaching 1e-2 would need ggml's float operations reproduced bit for bit.
    EXPECT_LE(max_diff, all_positions_bound);
  }

  std::string peer_;
  fs::path dir_;
};

std::vector<int32_t> sequence(int n, int32_t vocab) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back((37 + 101 * i) % vocab);
  return t;
}

TEST_F(QuantizePeer, WideSyntheticModelsInEveryKMixture) {
  // Every written format at least once (about 5 s of node start-up per file).
  const std::pair<const char*, std::vector<QuantMix>> cases[] = {
      {"qwen3", {QuantMix::kQ4_K_M, QuantMix::kQ2_K, QuantMix::kQ3_K_M, QuantMix::kQ5_K_M, QuantMix::kQ6_K,
                 QuantMix::kQ4_0}},
      {"llama", {QuantMix::kQ4_K_M, QuantMix::kQ4_1, QuantMix::kQ5_0, QuantMix::kQ5_1}}};
  for (const auto& [arch, mixes] : cases) {
    const Synth in = synth_f32(wide_config(arch), 7);
    ASSERT_TRUE(in.file);
    for (QuantMix mix : mixes) {
      compare(*in.file, mix, sequence(64, 512), std::string(arch) + "-" + std::string(quant_mix_info(mix).name));
    }
  }
}

// The grid and ternary formats as ridge writes them (with an importance matrix, which the 1-2 bit
// mixtures require): every format at least once, in llama.cpp's mixtures of them.
TEST_F(QuantizePeer, GridAndTernaryMixtures) {
  const Synth in = synth_f32(wide_config("qwen3"), 7);
  ASSERT_TRUE(in.file);
  const ImportanceMap importance = random_importance(*in.file, 3);
  for (QuantMix mix : {QuantMix::kIQ2_XXS, QuantMix::kIQ2_XS, QuantMix::kIQ2_M, QuantMix::kIQ3_XXS, QuantMix::kIQ3_M,
                       QuantMix::kIQ1_S, QuantMix::kIQ1_M, QuantMix::kTQ1_0, QuantMix::kTQ2_0}) {
    compare(*in.file, mix, sequence(64, 512), "qwen3-" + std::string(quant_mix_info(mix).name), 4e-2, &importance);
  }
}

// Mixture-of-experts files (3-D expert stacks quantized row by row, the router kept f32, the
// 8-expert rules in qwen3moe, qwen2moe's shared expert, gpt-oss's MXFP4 experts and biases):
// llama.cpp loads them and its
// probabilities match ridge's on the same file.
TEST_F(QuantizePeer, MixtureOfExpertsModels) {
  for (const char* arch : {"qwen3moe", "qwen2moe"}) {
    const Synth in = synth_moe_f32(wide_moe_config(arch), 17);
    ASSERT_TRUE(in.file);
    for (QuantMix mix : {QuantMix::kQ4_K_M, QuantMix::kQ3_K_M, QuantMix::kQ8_0}) {
      compare(*in.file, mix, sequence(64, 512), std::string(arch) + "-" + std::string(quant_mix_info(mix).name));
    }
  }
  // gpt-oss: the MXFP4 mixture llama.cpp ships it in, and the K mixture users make of it.
  const Synth oss = synth_f32(wide_gpt_oss_config(), 17);
  ASSERT_TRUE(oss.file);
  for (QuantMix mix : {QuantMix::kMXFP4_MOE, QuantMix::kQ4_K_M}) {
    compare(*oss.file, mix, sequence(64, 512), "gpt-oss-" + std::string(quant_mix_info(mix).name));
  }
}

// Qwen3.5 files (linear layers' attn_qkv under attn_v's rules, ssm_conv1d and the small state
// vectors kept f32, the small ssm_beta / ssm_alpha matrices in their fallback types): llama.cpp
// loads them and its probabilities match ridge's on the same file. Position 0 holds them to 1e-5
// as every file; after the first flip (see compare) the recurrent state carries it to every later
// position as the KV cache does, and through more layers: measured 1.9e-2..6.9e-2 (seed 17;
// tiny-qwen35moe q4_k_m the largest, with 3 top-1 swaps), so the bound for all positions is 1e-1.
TEST_F(QuantizePeer, HybridModels) {
  for (const char* preset : {"tiny-qwen35", "tiny-qwen35moe"}) {
    const Synth in = synth_f32(wide_qwen35_config(preset), 17);
    ASSERT_TRUE(in.file);
    for (QuantMix mix : {QuantMix::kQ4_K_M, QuantMix::kQ8_0}) {
      compare(*in.file, mix, sequence(64, 512), std::string(preset) + "-" + std::string(quant_mix_info(mix).name), 1e-1);
    }
  }
}

// A real trained model: stories260K (F32, 64-wide rows, so the K mixtures use their fallbacks).
TEST_F(QuantizePeer, Stories260K) {
  auto in = gguf::File::open(model::testing::stories_path());
  if (!in.ok()) GTEST_SKIP() << "no stories260K.gguf";
  // "Once upon a time" and llama.cpp's greedy continuation (tests/model/stories_test.cpp): 64 ids.
  const std::vector<int32_t> tokens = {
      1,   403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426,
      338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426,
      385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266,
      267, 337, 335, 312, 432, 398, 312, 286, 267, 414, 270, 333, 415, 426, 13,  438};
  for (QuantMix mix : {QuantMix::kQ8_0, QuantMix::kQ4_K_M}) {
    compare(*in, mix, tokens, "stories260K-" + std::string(quant_mix_info(mix).name));
  }
}

}  // namespace
}  // namespace ridge::offline
