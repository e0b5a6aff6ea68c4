// One sequence on a ModelRunner of its own: the simplest user of the forward (ridge run,
// ridge chat, perplexity, tests). Prompts are processed in chunks of many tokens per layer pass;
// decode is a batch of one token. Blocks are the cache's blocks 0..n-1 in order (one sequence
// owns them all). The runner owns the KV cache, the workspace and the backend; the session keeps
// the sequence.
//
// Models with sliding-window and global layers keep the windowed layers' K/V in a ring of window
// blocks (kv/kv_cache.h's window space; swa_full keeps every position instead): block b of the
// sequence lives in window block b % n, n enough for a window, a step and kTruncateSlack more
// positions, so a truncation by up to that many keeps its positions (one further back, into
// blocks the ring has overwritten, starts over at 0).
#pragma once

#include "sampling/sampler.h"
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "engine/runner.h"
#include "kv/kv_type.h"
#include "model/batch.h"
#include "model/model.h"

namespace ridge::engine {

struct SessionOptions {
  int64_t n_ctx = 0;        // context in tokens; 0: min(training context, 4096)
  kv::KvType kv_type = kv::KvType::kF16;
  int64_t block_size = 16;
  int64_t max_batch = 256;  // prompt tokens per forward step
  int64_t max_outputs = 1;  // rows of logits per step (eval with all_logits needs more)
  // A model with recurrent state: keep the state after each row of an eval with all logits (up to
  // max_outputs rows), so truncate() can roll back into them (speculative decoding). Costs
  // max_outputs state copies of memory, and a copy per row.
  bool keep_row_states = false;
  int n_threads = 1;
  std::string backend = "cpu";  // backend/registry.h
  bool swa_full = false;  // sliding-window layers keep every position (no ring; see above)
  bool mtp = false;       // the model's MTP head drafts (draft_mtp); a model with one
};

// A pool the caller keeps alive longer than the session, lent to it (not owned).
inline std::shared_ptr<ThreadPool> lend_pool(ThreadPool& pool) {
  return std::shared_ptr<ThreadPool>(std::shared_ptr<ThreadPool>(), &pool);
}

class Session {
 public:
  // pool: threads shared with something that never runs at the same time (a draft model's
  // session takes its target's), of at most opts.n_threads; null: a pool of its own.
  static Result<Session> create(const model::Model& model, const SessionOptions& opts,
                                std::shared_ptr<ThreadPool> pool = nullptr);

  // Appends `tokens` to the sequence. Returns the logits of the last token ([n_vocab]) or, with
  // all_logits, of every token ([tokens.size(), n_vocab]). Valid until the next eval.
  // Fails (and appends nothing) when the tokens do not fit in the context.
  Result<std::span<const float>> eval(std::span<const int32_t> tokens, bool all_logits = false);

  int64_t n_past() const { return n_past_; }
  int64_t n_ctx() const { return n_ctx_; }
  const model::Model& model() const { return *model_; }
  ThreadPool& pool() const { return *runner_->pool(); }
  // Forgets the sequence (the cache is overwritten from position 0 again).
  void reset() {
    n_past_ = 0;
    checkpoint_ = 0;
    n_written_ = 0;
  }
  // Keeps only the first n positions (n <= n_past) and returns how many it kept: n. A model with
  // recurrent state (linear-attention layers) cannot roll back a state; it keeps
  //   - with keep_row_states, the state after each row of the last eval with all_logits (a
  //     speculative verification: up to max_outputs rows), so a truncation into them keeps n;
  //   - its checkpoint, the state after the last eval of several tokens without all_logits (a
  //     chat's prompt), when that is not past n;
  // and otherwise starts over (0). With a window ring, a truncation into blocks the ring has
  // overwritten starts over too.
  int64_t truncate(int64_t n);
  // The MTP head (SessionOptions::mtp): k draft tokens after the text, whose newest token (at
  // position n_past) is not evaluated yet, each drawn from the head's logits (greedy, or by the
  // sampler with its distribution appended to *q as sampling::DraftDraw does). The head's K/V
  // at n_past.. n_past + k - 1 is written; the next eval writes those positions over.
  Result<std::vector<int32_t>> draft_mtp(std::span<const int32_t> text, int64_t k,
                                         sampling::Sampler* sampler = nullptr,
                                         std::vector<std::vector<sampling::TokenProb>>* q = nullptr);
  // The window ring's blocks (0: none).
  int64_t n_window_blocks() const { return n_window_blocks_; }

  // Positions a truncation may go back while the window ring still holds what it needs.
  static constexpr int64_t kTruncateSlack = 256;

 private:
  Session(const model::Model& model, std::unique_ptr<ModelRunner> runner)
      : model_(&model), runner_(std::move(runner)) {}
  const model::Model* model_;
  std::unique_ptr<ModelRunner> runner_;
  model::Batch batch_;
  // The window ring's table for a step starting at position `from` (block b: b % n, kNoBlock
  // before the window of `from`).
  const std::vector<int32_t>& window_table(int64_t from);
  // Whether the ring still holds the blocks a step from position n reads.
  bool ring_holds(int64_t n) const;

  std::vector<int32_t> table_;  // block ids 0..n_blocks-1
  std::vector<int32_t> window_table_;
  int64_t n_window_blocks_ = 0, window_ = 0;
  int64_t n_written_ = 0;  // positions written since reset (the ring's newest block)
  std::vector<float> all_;      // [n_tokens, n_vocab] for all_logits
  int64_t n_ctx_ = 0;
  int64_t max_tokens_ = 0;      // tokens per step
  int64_t max_outputs_ = 0;     // rows of logits per step
  int64_t n_past_ = 0;
  int64_t checkpoint_ = 0;  // recurrent state: positions the checkpoint slot holds (0: none)
  // Recurrent state: slot 2 + j holds the state after rows_from_ + j + 1 positions, for j below
  // n_rows_ - 1 (after the last row it is the live state).
  int64_t rows_from_ = 0, n_rows_ = 0, max_rows_ = 0;
  // The MTP head: the final-norm hidden state at position mtp_h_pos_ (what the head pairs with
  // the token after it), and every row's of the last eval with all logits from mtp_rows_from_
  // (a truncation into them takes its new last position's).
  bool mtp_ = false;
  std::vector<float> mtp_h_;
  int64_t mtp_h_pos_ = -1;
  std::vector<float> mtp_rows_;
  int64_t mtp_rows_from_ = 0;
  // The hidden state the head pairs with position `pos`'s token: at pos - 1, or zeros.
  std::span<const float> mtp_h_before(int64_t pos);
  // After a step of eval at n_past_: its rows' hidden states (the first step of an eval starts
  // the rows over; only an eval with all logits keeps them all).
  void keep_mtp_rows(bool first_step, bool all_rows);
  std::vector<float> zeros_;
};

}  // namespace ridge::engine
