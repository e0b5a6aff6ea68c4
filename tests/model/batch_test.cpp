// Batch invariance: a sequence decoded alone and inside a batch of 8 (mixed prompt lengths,
// prompts prefilled in the same step, then one decode token per sequence per step) gets the
// same greedy tokens and bit-identical logits, whatever the thread count.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "offline/synth.h"
#include "test_util.h"

namespace ridge::model {
namespace {

constexpr int kSeqs = 8;
constexpr int kSteps = 12;
constexpr int64_t kBlocksPerSeq = 4;  // 64 tokens per sequence, block size 16

struct Trace {
  std::vector<int32_t> tokens;              // greedy tokens
  std::vector<std::vector<float>> logits;   // [step][n_vocab]
};

std::vector<int32_t> prompt_of(int s) {
  std::vector<int32_t> p;
  for (int i = 0; i < 3 + 4 * s; ++i) p.push_back((s * 31 + i * 17 + 5) % 512);
  return p;
}

// Runs the sequences `which` together; sequence s owns blocks [s*4, s*4+4) of the cache.
std::vector<Trace> run(const Model& m, const std::vector<int>& which, int n_threads) {
  auto kv = kv::KvCache::create(m.kv_config(kSeqs * kBlocksPerSeq, kv::KvType::kF16, 16));
  EXPECT_TRUE(kv.ok());
  WorkspaceLimits lim;
  lim.max_tokens = 256;
  lim.max_outputs = kSeqs;
  lim.max_context = 64;
  lim.n_threads = n_threads;
  auto ws = Workspace::create(m.config(), lim);
  EXPECT_TRUE(ws.ok());
  ThreadPool pool(n_threads);
  backend::CpuBackend cpu(m.kernels(), pool);
  std::vector<Trace> out(which.size());
  std::vector<std::vector<int32_t>> tables(which.size());
  std::vector<int32_t> n_past(which.size(), 0);
  for (size_t i = 0; i < which.size(); ++i) {
    for (int64_t b = 0; b < kBlocksPerSeq; ++b) {
      tables[i].push_back(static_cast<int32_t>(which[i] * kBlocksPerSeq + b));
    }
  }
  Batch batch;
  const int64_t n_vocab = m.config().n_vocab;
  for (int step = 0; step <= kSteps; ++step) {
    batch.clear();
    for (size_t i = 0; i < which.size(); ++i) {
      const std::vector<int32_t> toks =
          step == 0 ? prompt_of(which[i]) : std::vector<int32_t>{out[i].tokens.back()};
      const auto seq = batch.add_seq(tables[i], n_past[i] + static_cast<int32_t>(toks.size()));
      for (size_t j = 0; j < toks.size(); ++j) {
        batch.add_token(toks[j], n_past[i] + static_cast<int32_t>(j), seq, j + 1 == toks.size(), 16);
      }
      n_past[i] += static_cast<int32_t>(toks.size());
    }
    auto logits = m.forward(batch, *kv, *ws, cpu);
    EXPECT_TRUE(logits.ok()) << logits.status().message();
    if (!logits.ok()) return out;
    for (size_t i = 0; i < which.size(); ++i) {
      std::span<const float> row = logits->subspan(i * static_cast<size_t>(n_vocab), static_cast<size_t>(n_vocab));
      out[i].logits.emplace_back(row.begin(), row.end());
      out[i].tokens.push_back(testing::argmax(row));
    }
  }
  return out;
}

TEST(BatchInvariance, AloneEqualsInBatchOfEight) {
  for (const auto& [preset, type] : {std::pair{"tiny-qwen2", "f32"}, std::pair{"tiny-qwen2", "q8_0"},
                                     std::pair{"tiny-qwen3moe", "q8_0"}}) {
    SCOPED_TRACE(std::string(preset) + " " + type);
    gguf::Writer writer;
    ASSERT_TRUE(testing::build_synthetic(preset, type, 11, writer).ok());
    auto bytes = writer.write_to_memory();
    ASSERT_TRUE(bytes.ok());
    auto file = gguf::File::parse(*bytes, preset);
    ASSERT_TRUE(file.ok());
    auto m = Model::from_file(std::make_shared<const gguf::File>(std::move(file).value()),
                              testing::test_kernels());
    ASSERT_TRUE(m.ok()) << m.status().message();

    std::vector<int> all;
    for (int s = 0; s < kSeqs; ++s) all.push_back(s);
    const auto together = run(*m, all, 2);
    ASSERT_EQ(together.size(), static_cast<size_t>(kSeqs));
    for (int s = 0; s < kSeqs; ++s) {
      const auto alone = run(*m, {s}, 1);
      ASSERT_EQ(alone.size(), 1u);
      EXPECT_EQ(alone[0].tokens, together[static_cast<size_t>(s)].tokens) << "sequence " << s;
      EXPECT_TRUE(alone[0].logits == together[static_cast<size_t>(s)].logits)
          << "sequence " << s << ": logits not bit-identical";
    }
  }
}

TEST(BatchValidation, RejectsInconsistentBatches) {
  Batch b;
  b.add_seq({0, 1}, 20);
  b.add_token(5, 19, 0, true, 16);
  EXPECT_TRUE(b.validate(512, 4, 16).ok());
  EXPECT_FALSE(b.validate(4, 4, 16).ok());   // token id outside the vocabulary
  EXPECT_FALSE(b.validate(512, 1, 16).ok()); // block id 1 outside a 1-block cache
  Batch far;
  far.add_seq({0}, 16);
  far.add_token(5, 16, 0, true, 16);         // position beyond the context
  EXPECT_FALSE(far.validate(512, 4, 16).ok());
  Batch slot = b;
  slot.slots[0] = 3;                         // slot that is not the block table's
  EXPECT_FALSE(slot.validate(512, 4, 16).ok());
  Batch offsets = b;
  offsets.block_offsets.back() = 1;          // offsets that do not cover the block ids
  EXPECT_FALSE(offsets.validate(512, 4, 16).ok());
  offsets = b;
  offsets.block_offsets.push_back(2);        // a table for a sequence that is not there
  EXPECT_FALSE(offsets.validate(512, 4, 16).ok());
}

// Sequences' tables follow one another in block_ids; clear() forgets them all.
TEST(BatchValidation, FlatBlockTables) {
  Batch b;
  b.add_seq({3, 1}, 20);
  b.add_seq({}, 0);
  b.add_seq({2}, 5);
  EXPECT_EQ(b.block_ids, (std::vector<int32_t>{3, 1, 2}));
  EXPECT_EQ(b.block_offsets, (std::vector<int32_t>{0, 2, 2, 3}));
  EXPECT_EQ(std::vector<int32_t>(b.block_table(2).begin(), b.block_table(2).end()), std::vector<int32_t>{2});
  EXPECT_TRUE(b.block_table(1).empty());
  b.add_token(7, 4, 2, true, 16);
  EXPECT_EQ(b.slots[0], 2 * 16 + 4);
  EXPECT_TRUE(b.validate(512, 4, 16).ok());
  b.clear();
  EXPECT_TRUE(b.block_ids.empty());
  EXPECT_EQ(b.block_offsets, std::vector<int32_t>{0});
}

// With a window space every sequence has a window-block table; a token needs every block of its
// window there, and only those (the ones before may be kv::kNoBlock: given back).
TEST(BatchValidation, WindowTablesCoverEachTokensWindow) {
  Batch b;
  b.add_seq({0, 1, 2}, 40, -1, {kv::kNoBlock, 5, 6});  // window 8: position 39 reads 32..39
  b.add_token(7, 39, 0, true, 16);
  const Batch::Limits lim{512, 4, 16, 8, 8};
  EXPECT_TRUE(b.validate(lim).ok());
  EXPECT_EQ(b.window_slots[0], 6 * 16 + 7);
  Batch wide = b;
  wide.add_token(7, 20, 0, false, 16);                 // reads 13..20: block 0 is gone
  const Status s = wide.validate(lim);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "batch: row 1 (position 20) has no window block 0 of its window");
  Batch slot = b;
  slot.window_slots[0] = 5 * 16 + 7;
  EXPECT_FALSE(slot.validate(lim).ok());
  Batch range = b;
  range.window_block_ids[2] = 8;                       // outside an 8-block window space
  EXPECT_FALSE(range.validate(lim).ok());
  EXPECT_FALSE(b.validate(512, 4, 16).ok());           // window tables for a cache without a window space
}

}  // namespace
}  // namespace ridge::model
