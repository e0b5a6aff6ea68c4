// The window space (kv/kv_cache.h): sliding-window layers that keep only their window, in blocks
// of their own that go back to a small pool and are written over by others, give bit for bit
// the logits of a cache that keeps every position in every layer. The blocks given back are
// filled with NaN before each step, so a read of one shows.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "base/thread_pool.h"
#include "kv/block_manager.h"
#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/workspace.h"
#include "test_util.h"

namespace ridge::model {
namespace {

constexpr int32_t kBs = 4;
constexpr int32_t kChunk = 7;
constexpr int kDecode = 16;

struct Seq {
  std::vector<int32_t> tokens;
  int32_t n_computed = 0;
  int32_t n_decoded = 0;
  kv::BlockTable table;
};

// NaN in every slot of every window block no sequence holds, in every windowed layer.
void scribble_free_window_blocks(kv::KvCache& kv, const std::vector<Seq>& seqs) {
  std::vector<uint8_t> held(static_cast<size_t>(kv.n_blocks_window()), 0);
  for (const Seq& s : seqs) {
    for (kv::BlockId id : s.table.window_blocks) {
      if (id != kv::kNoBlock) held[static_cast<size_t>(id)] = 1;
    }
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t l = 0; l < kv.config().n_layer; ++l) {
    if (kv.space_of(l) != kv::KvSpace::kWindow) continue;
    const kv::KvLayerShape shape = kv.config().layer(l);
    const std::vector<float> junk(static_cast<size_t>(shape.n_head_kv * shape.head_dim), nan);
    for (int64_t b = 0; b < kv.n_blocks_window(); ++b) {
      if (held[static_cast<size_t>(b)] != 0) continue;
      for (int64_t o = 0; o < kBs; ++o) kv.write(l, b * kBs + o, junk.data(), junk.data());
    }
  }
}

// Two sequences (prompts of 45 and 30 tokens in chunks of 7, then greedy decoding), side by side;
// every logits row of both, in order. n_window_blocks > 0: with a window space of that many.
std::vector<std::vector<float>> run(const Model& m, kv::KvType kvt, int32_t n_window_blocks,
                                    int32_t* n_released = nullptr) {
  auto kv = kv::KvCache::create(m.kv_config(64, kvt, kBs, 1, n_window_blocks));
  EXPECT_TRUE(kv.ok()) << kv.status().message();
  EXPECT_EQ(kv->n_blocks_window(), n_window_blocks);
  kv::BlockManager blocks(64, kBs, false,
                          {n_window_blocks, n_window_blocks > 0 ? static_cast<int32_t>(m.config().n_swa) : 0});
  WorkspaceLimits lim;
  lim.max_tokens = 64;
  lim.max_outputs = 8;
  lim.max_context = 256;
  lim.n_threads = 1;
  lim.block_size = kBs;
  auto ws = Workspace::create(m.config(), lim);
  EXPECT_TRUE(ws.ok());
  ThreadPool pool(1);
  backend::CpuBackend cpu(m.kernels(), pool);
  std::vector<Seq> seqs(2);
  for (int i = 0; i < 45; ++i) seqs[0].tokens.push_back((11 + 37 * i) % 500);
  for (int i = 0; i < 30; ++i) seqs[1].tokens.push_back((5 + 53 * i) % 500);
  std::vector<std::vector<float>> out;
  Batch batch;
  for (int step = 0; step < 100; ++step) {
    batch.clear();
    std::vector<std::pair<Seq*, int32_t>> advanced;
    for (Seq& s : seqs) {
      if (s.n_decoded > kDecode) continue;
      const int32_t n_new = std::min<int32_t>(static_cast<int32_t>(s.tokens.size()) - s.n_computed, kChunk);
      blocks.release_out_of_window(s.table, s.n_computed);
      const int32_t n_more = std::max(0, s.n_computed + n_new - s.table.n_tokens);
      EXPECT_TRUE(blocks.allocate(s.table, n_more).ok());
      const int32_t idx = batch.add_seq(s.table.blocks, s.n_computed + n_new, -1, s.table.window_blocks);
      for (int32_t j = 0; j < n_new; ++j) {
        const int32_t pos = s.n_computed + j;
        batch.add_token(s.tokens[static_cast<size_t>(pos)], pos, idx, j + 1 == n_new, kBs);
      }
      advanced.emplace_back(&s, n_new);
    }
    if (advanced.empty()) break;
    if (n_window_blocks > 0) scribble_free_window_blocks(*kv, seqs);
    auto r = m.forward(batch, *kv, *ws, cpu);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) break;
    const auto n_vocab = static_cast<size_t>(m.config().n_vocab);
    for (size_t k = 0; k < advanced.size(); ++k) {
      auto [s, n_new] = advanced[k];
      const std::span<const float> row = r->subspan(k * n_vocab, n_vocab);
      out.emplace_back(row.begin(), row.end());
      s->n_computed += n_new;
      if (s->n_computed == static_cast<int32_t>(s->tokens.size())) {
        s->tokens.push_back(testing::argmax(row));
        s->n_decoded += 1;
      }
    }
  }
  if (n_released != nullptr) *n_released = seqs[0].table.n_window_released + seqs[1].table.n_window_released;
  return out;
}

class WindowSpace : public ::testing::TestWithParam<std::tuple<const char*, kv::KvType>> {};

TEST_P(WindowSpace, LogitsBitIdenticalToKeepingEveryPosition) {
  const auto [preset, kvt] = GetParam();
  const Model& m = testing::cached_tiny(preset, 3);
  ASSERT_TRUE(m.has_window_space());
  const auto full = run(m, kvt, 0);
  // Window 8, blocks of 4, chunks of 7: a sequence holds at most 5 window blocks.
  int32_t n_released = 0;
  const auto windowed = run(m, kvt, 10, &n_released);
  ASSERT_EQ(full.size(), windowed.size());
  ASSERT_GT(full.size(), static_cast<size_t>(2 * kDecode));
  EXPECT_GE(n_released, 20);  // most of each sequence's blocks went back (of 16 and 12)
  for (size_t i = 0; i < full.size(); ++i) {
    ASSERT_EQ(full[i], windowed[i]) << preset << ": logits row " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, WindowSpace,
                         ::testing::Values(std::tuple{"tiny-gemma3", kv::KvType::kF16},
                                           std::tuple{"tiny-gemma3", kv::KvType::kF32},
                                           std::tuple{"tiny-gemma2", kv::KvType::kQ8_0},
                                           std::tuple{"tiny-gpt-oss", kv::KvType::kF16},
                                           std::tuple{"tiny-gemma4", kv::KvType::kF16}),
                         [](const auto& param_info) {
                           std::string n = std::string(std::get<0>(param_info.param)) + "_" +
                                           std::string(kv::kv_type_name(std::get<1>(param_info.param)));
                           for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

// Models with windowed layers only, or none, have no window space.
TEST(WindowSpace, OnlyWhereWindowedAndGlobalLayersMix) {
  EXPECT_FALSE(testing::cached_tiny("tiny-qwen3", 3).has_window_space());
  const Model& m = testing::cached_tiny("tiny-qwen3", 3);
  EXPECT_EQ(m.kv_config(8, kv::KvType::kF16, 16, 1, 4).n_blocks_window, 0);
}

}  // namespace
}  // namespace ridge::model
