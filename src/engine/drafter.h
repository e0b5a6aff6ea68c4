// Speculative decoding's draft model inside the engine (docs/speculative.md): a second runner
// with a KV pool of its own that follows each drafting sequence's text, and proposes greedy
// drafts for every drafting sequence of a step at once, in batched draft steps (one row per
// sequence each, the first also catching up on the tokens the draft's cache lacks).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "engine/request.h"
#include "engine/runner.h"
#include "kv/block_manager.h"
#include "model/batch.h"
#include "sampling/sampler.h"

namespace ridge::engine {

class Drafter {
 public:
  // runner: the draft model's (its own blocks); max_tokens: tokens per draft step at most (the
  // catch-up of a long text takes several steps), within the runner's limits.
  Drafter(std::unique_ptr<Runner> runner, int32_t max_tokens);

  struct Work {
    RequestId id;
    std::span<const int32_t> text;  // the sequence's tokens, its newest one included
    int32_t k;                      // draft tokens wanted, >= 1
    // Null: greedy drafts. Else each draft token is drawn by it (the text and the drafts so far
    // as its history) and the distribution it was drawn from appended to *q (cleared first).
    sampling::Sampler* sampler = nullptr;
    std::vector<std::vector<sampling::TokenProb>>* q = nullptr;
  };
  // Up to w.k tokens after each w.text (out[i] for work[i]). The draft's cache of a
  // sequence first drops what no longer matches its text (rejected drafts). A sequence gets
  // none where its catch-up does not fit this step's tokens (it catches up over the next ones)
  // or the draft's pool is full (its cache is dropped). An error from the runner is returned.
  Result<std::vector<std::vector<int32_t>>> propose(std::span<const Work> work);

  // Frees a finished sequence's cache (no-op for one it never drafted for).
  void release(RequestId id);

  int32_t n_blocks_used() const;
  int64_t n_steps() const { return n_steps_; }  // draft forward steps run
  const Runner& runner() const { return *runner_; }

 private:
  struct Cache {
    kv::BlockTable table;
    std::vector<int32_t> tokens;  // whose K/V the cache holds, positions 0..
  };
  void drop(Cache& c);

  std::unique_ptr<Runner> runner_;
  kv::BlockManager blocks_;
  int32_t max_tokens_;
  std::unordered_map<RequestId, Cache> caches_;
  model::Batch batch_;
  int64_t n_steps_ = 0;
};

}  // namespace ridge::engine
