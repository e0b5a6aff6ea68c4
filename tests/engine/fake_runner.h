// A runner without a model: it stores (token, position) per KV slot and "predicts" the next
// token as a hash of the whole context read back through the block table. Any corruption of the
// KV bookkeeping (wrong slot, stale prefix-cache block, lost recompute) changes the output or
// fails the step, so a sequence's greedy output must equal the one it gets when run alone.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/runner.h"

namespace ridge::engine::testing {

class FakeRunner final : public Runner {
 public:
  FakeRunner(int32_t n_blocks, int32_t block_size, int32_t n_vocab)
      : n_blocks_(n_blocks), block_size_(block_size), n_vocab_(n_vocab),
        tokens_(static_cast<size_t>(n_blocks * block_size), -1),
        positions_(static_cast<size_t>(n_blocks * block_size), -1) {}

  Result<std::span<const float>> run(const model::Batch& b) override {
    RIDGE_RETURN_IF_ERROR(b.validate(n_vocab_, n_blocks_, block_size_));
    if (max_outputs > 0 && b.n_outputs() > max_outputs) {
      return error("fake runner: {} logits rows, at most {}", b.n_outputs(), max_outputs);
    }
    n_runs += 1;
    max_tokens_seen = std::max<int64_t>(max_tokens_seen, b.n_tokens());
    for (int64_t t = 0; t < b.n_tokens(); ++t) {
      tokens_[static_cast<size_t>(b.slots[static_cast<size_t>(t)])] = b.tokens[static_cast<size_t>(t)];
      positions_[static_cast<size_t>(b.slots[static_cast<size_t>(t)])] = b.positions[static_cast<size_t>(t)];
    }
    logits_.assign(static_cast<size_t>(b.n_outputs() * n_vocab_), 0.0f);
    int64_t row = 0;
    for (int64_t t = 0; t < b.n_tokens(); ++t) {
      if (!b.need_logits[static_cast<size_t>(t)]) continue;
      const auto table = b.block_table(b.seq_index[static_cast<size_t>(t)]);
      uint64_t h = 1469598103934665603ull;
      for (int32_t p = 0; p <= b.positions[static_cast<size_t>(t)]; ++p) {
        const auto slot = static_cast<size_t>(table[static_cast<size_t>(p / block_size_)] * block_size_ + p % block_size_);
        if (positions_[slot] != p) return error("fake runner: slot {} holds position {}, expected {}", slot, positions_[slot], p);
        h = (h ^ static_cast<uint64_t>(tokens_[slot])) * 1099511628211ull;
      }
      float* l = logits_.data() + row * n_vocab_;
      for (int32_t v = 0; v < n_vocab_; ++v) l[v] = static_cast<float>((h >> (v % 48)) & 7);
      const bool disagree = disagree_every > 0 && (h >> 7) % static_cast<uint64_t>(disagree_every) == 0;
      l[(h + (disagree ? 1 : 0)) % static_cast<uint64_t>(n_vocab_)] = 20.0f;
      ++row;
    }
    return std::span<const float>(logits_);
  }
  int32_t n_vocab() const override { return n_vocab_; }
  int32_t n_blocks() const override { return n_blocks_; }
  int32_t block_size() const override { return block_size_; }

  int64_t n_runs = 0;
  int64_t max_tokens_seen = 0;
  int64_t max_outputs = 0;  // logits rows a step may ask for (0: any), as ModelRunner's limit
  // > 0: one context in about this many moves the top token to the next id (a draft model's
  // runner that mostly agrees with an unchanged one).
  int64_t disagree_every = 0;

 private:
  int32_t n_blocks_, block_size_, n_vocab_;
  std::vector<int32_t> tokens_, positions_;
  std::vector<float> logits_;
};

}  // namespace ridge::engine::testing
