// Batch invariance on a real (tiny, synthetic) model: a sequence's logits, step by step, are
// bit-identical whether it runs alone or among 31 other sequences, with its prompt in one step
// or in chunks, on 1 or 2 threads, and wherever its KV blocks are; for every KV cache type.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <tuple>

#include "backend/cpu/cpu_backend.h"
#include "base/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/workspace.h"
#include "tiny_model.h"

namespace ridge::engine {
namespace {

constexpr int64_t kBlockSize = 16;
constexpr int64_t kBlocksPerSeq = 8;  // 128 positions per sequence

struct Seq {
  std::vector<int32_t> tokens;
  int32_t n_computed = 0;
  std::vector<int32_t> blocks;
};

int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// Runs `target` (prefill in chunks of `chunk` tokens, then n_decode greedy steps) together with
// `others` (same schedule) on `n_threads`; the target's KV blocks start at `target_block0`.
// Returns the target's logits rows, one per step that produced them.
std::vector<std::vector<float>> run(const model::Model& m, const std::vector<int32_t>& prompt,
                                    const std::vector<std::vector<int32_t>>& others, int32_t chunk,
                                    int n_threads, int32_t target_block0, int n_decode,
                                    kv::KvType kv_type) {
  const auto n_seqs = static_cast<int64_t>(others.size() + 1);
  auto kv = kv::KvCache::create(m.kv_config(n_seqs * kBlocksPerSeq + 8, kv_type, kBlockSize));
  EXPECT_TRUE(kv.ok());
  model::WorkspaceLimits lim;
  lim.max_tokens = 1024;
  lim.max_outputs = 64;
  lim.max_context = kBlocksPerSeq * kBlockSize;
  lim.n_threads = n_threads;
  lim.block_size = kBlockSize;
  auto ws = model::Workspace::create(m.config(), lim);
  EXPECT_TRUE(ws.ok());
  ThreadPool pool(n_threads);
  backend::CpuBackend cpu(m.kernels(), pool);
  std::vector<Seq> seqs(static_cast<size_t>(n_seqs));
  seqs[0].tokens = prompt;
  for (size_t i = 0; i < others.size(); ++i) seqs[i + 1].tokens = others[i];
  int32_t next_block = 0;
  for (size_t i = 1; i < seqs.size(); ++i) {
    if (next_block == target_block0) next_block += kBlocksPerSeq;
    for (int b = 0; b < kBlocksPerSeq; ++b) seqs[i].blocks.push_back(next_block++);
  }
  for (int b = 0; b < kBlocksPerSeq; ++b) seqs[0].blocks.push_back(target_block0 + b);

  std::vector<std::vector<float>> out;
  model::Batch batch;
  for (int guard = 0; guard < 1000; ++guard) {
    batch.clear();
    std::vector<size_t> with_logits;
    std::vector<std::pair<size_t, int32_t>> advanced;  // (seq, n_new)
    for (size_t i = 0; i < seqs.size(); ++i) {
      Seq& s = seqs[i];
      const int32_t left = static_cast<int32_t>(s.tokens.size()) - s.n_computed;
      const int32_t n_new = std::min(left, chunk);
      if (n_new <= 0 || s.n_computed >= kBlocksPerSeq * kBlockSize - 8) continue;
      const int32_t idx = batch.add_seq(s.blocks, s.n_computed + n_new);
      const bool logits = n_new == left;
      for (int32_t j = 0; j < n_new; ++j) {
        batch.add_token(s.tokens[static_cast<size_t>(s.n_computed + j)], s.n_computed + j, idx,
                        logits && j + 1 == n_new, kBlockSize);
      }
      if (logits) with_logits.push_back(i);
      advanced.emplace_back(i, n_new);
    }
    if (batch.n_tokens() == 0) break;
    auto r = m.forward(batch, *kv, *ws, cpu);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return out;
    for (auto [i, n_new] : advanced) seqs[i].n_computed += n_new;
    const auto n_vocab = static_cast<size_t>(m.config().n_vocab);
    for (size_t k = 0; k < with_logits.size(); ++k) {
      Seq& s = seqs[with_logits[k]];
      const std::span<const float> row = r->subspan(k * n_vocab, n_vocab);
      if (with_logits[k] == 0) out.emplace_back(row.begin(), row.end());
      if (static_cast<int>(out.size()) <= n_decode || with_logits[k] != 0) s.tokens.push_back(argmax(row));
    }
    if (static_cast<int>(out.size()) > n_decode) break;
  }
  return out;
}

bool bit_equal(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0) return false;
  }
  return true;
}

// (preset, weight type, KV cache type)
class BatchInvariance
    : public ::testing::TestWithParam<std::tuple<const char*, const char*, kv::KvType>> {};

TEST_P(BatchInvariance, LogitsBitIdentical) {
  const auto [preset, weights, kvt] = GetParam();
  const model::Model& m = *testing::tiny_model(preset, weights).model;
  const auto n_vocab = static_cast<uint32_t>(m.config().n_vocab);
  std::mt19937 rng(11);
  std::vector<int32_t> prompt(37);
  for (auto& t : prompt) t = static_cast<int32_t>(rng() % n_vocab);
  std::vector<std::vector<int32_t>> others(31);
  for (auto& o : others) {
    o.resize(1 + rng() % 50);
    for (auto& t : o) t = static_cast<int32_t>(rng() % n_vocab);
  }
  constexpr int kDecode = 12;
  const auto alone = run(m, prompt, {}, 1000, 1, 0, kDecode, kvt);
  ASSERT_EQ(alone.size(), static_cast<size_t>(kDecode + 1));
  EXPECT_TRUE(bit_equal(alone, run(m, prompt, others, 1000, 1, 40, kDecode, kvt))) << "in a batch of 32";
  EXPECT_TRUE(bit_equal(alone, run(m, prompt, {}, 5, 1, 0, kDecode, kvt))) << "chunked prefill";
  EXPECT_TRUE(bit_equal(alone, run(m, prompt, others, 7, 1, 96, kDecode, kvt))) << "chunked, in a batch of 32";
  EXPECT_TRUE(bit_equal(alone, run(m, prompt, {}, 1000, 2, 0, kDecode, kvt))) << "2 threads";
  EXPECT_TRUE(bit_equal(alone, run(m, prompt, others, 7, 2, 8, kDecode, kvt))) << "2 threads, chunked, batch of 32";
}

INSTANTIATE_TEST_SUITE_P(
    Types, BatchInvariance,
    ::testing::Values(std::tuple{"tiny-qwen3", "f32", kv::KvType::kF16},
                      std::tuple{"tiny-qwen3", "f16", kv::KvType::kF16},
                      std::tuple{"tiny-qwen3", "q8_0", kv::KvType::kF16},
                      std::tuple{"tiny-qwen3", "q8_0", kv::KvType::kBF16},
                      std::tuple{"tiny-qwen3", "q8_0", kv::KvType::kQ8_0},
                      std::tuple{"tiny-qwen3", "f32", kv::KvType::kF32},
                      // Mixture of experts: tokens grouped by expert must not change a token's sums.
                      std::tuple{"tiny-qwen3moe", "f16", kv::KvType::kF16},
                      std::tuple{"tiny-qwen3moe", "q8_0", kv::KvType::kF16},
                      std::tuple{"tiny-qwen2moe", "q8_0", kv::KvType::kF16},
                      // Sliding windows, sinks and MXFP4 experts (gpt-oss).
                      std::tuple{"tiny-gpt-oss", "mxfp4", kv::KvType::kF16},
                      std::tuple{"tiny-gpt-oss", "f32", kv::KvType::kF32},
                      // Sliding windows with their own rope, GeGLU, post-norms, a logit cap (gemma3).
                      std::tuple{"tiny-gemma3", "q8_0", kv::KvType::kF16},
                      std::tuple{"tiny-gemma3", "f32", kv::KvType::kF32},
                      std::tuple{"tiny-gemma2", "q8_0", kv::KvType::kF16},
                      // Per-layer shapes, KV-sharing layers, per-layer embeddings (gemma4).
                      std::tuple{"tiny-gemma4", "q8_0", kv::KvType::kF16},
                      std::tuple{"tiny-gemma4", "f32", kv::KvType::kQ8_0},
                      std::tuple{"tiny-gemma4moe", "q8_0", kv::KvType::kF16}),
    [](const auto& p) {
      return testing::test_name(std::string(std::get<0>(p.param)) + "_" + std::get<1>(p.param) + "_kv_" +
                                std::string(kv::kv_type_name(std::get<2>(p.param))));
    });

}  // namespace
}  // namespace ridge::engine
