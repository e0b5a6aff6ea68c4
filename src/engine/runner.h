// Runner: what executes one flat Batch for the engine. ModelRunner owns the model's KV cache,
// workspace, thread pool and the backend that runs the forward on them; tests substitute a fake runner so the engine can be exercised
// without a model.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/backend.h"
#include "base/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/model.h"
#include "model/workspace.h"

namespace ridge::engine {

class Runner {
 public:
  virtual ~Runner() = default;
  // Runs the batch (writes its K/V) and returns the logits of the rows with need_logits, in row
  // order: [n_outputs, n_vocab], valid until the next run().
  virtual Result<std::span<const float>> run(const model::Batch& batch) = 0;
  virtual int32_t n_vocab() const = 0;
  virtual int32_t n_blocks() const = 0;     // KV blocks of the cache
  virtual int32_t block_size() const = 0;
  // A window space (kv/kv_cache.h): its KV blocks and the sliding window in positions; 0 if none.
  virtual int32_t n_window_blocks() const { return 0; }
  virtual int32_t kv_window() const { return 0; }
  // Width of a hidden-state row (Batch::output_hidden); 0 when the runner cannot return them.
  virtual int32_t n_embd() const { return 0; }
  // Models with linear-attention layers: how many sequences can hold a recurrent state at once
  // (Batch::state_slots indexes them); 0 otherwise.
  virtual int32_t n_state_slots() const { return 0; }
  // Recurrent-state slot `to` becomes a copy of slot `from` (a prefix-cache hit's state).
  virtual void copy_state(int32_t /*from*/, int32_t /*to*/) {}
  // Mixture of experts: the distinct experts each layer ran in the last run(); empty otherwise.
  virtual std::span<const int64_t> experts_run() const { return {}; }

  // The MTP head (ModelRunnerOptions::mtp; model/mtp.cpp). Every run() then also writes the
  // head's K/V (Batch::mtp_h: each sequence's hidden state before its first row), and
  // hidden_rows() holds every row's final-norm hidden state [n_tokens, n_embd]; run_mtp() runs
  // one step of the head (row r: token r with hidden state h[r]) and returns every row's
  // logits, hidden_rows() then holding the head's own hidden states.
  virtual bool has_mtp() const { return false; }
  virtual Result<std::span<const float>> run_mtp(const model::Batch& /*batch*/, std::span<const float> /*h*/) {
    return error("this runner has no MTP head");
  }
  virtual std::span<const float> hidden_rows() const { return {}; }
};

struct ModelRunnerOptions {
  int64_t n_blocks = 0;
  int64_t n_window_blocks = 0;  // > 0: the sliding-window layers' K/V in a window space of these
  int64_t block_size = 16;
  kv::KvType kv_type = kv::KvType::kF16;
  int64_t max_tokens = 512;   // tokens per step
  int64_t max_outputs = 64;   // rows of logits per step (= max sequences)
  int64_t max_context = 4096; // max-model-len
  int n_threads = 1;
  bool embeddings = false;    // steps return hidden states (Batch::output_hidden), no logits
  std::string backend = "cpu";  // the backend that runs the forward (backend/registry.h)
  int64_t n_state_slots = 1;  // sequences holding a recurrent state at once (hybrid models)
  bool mtp = false;           // the MTP head's KV layer and buffers (a model with one)
};

class ModelRunner final : public Runner {
 public:
  // pool: threads shared with another runner that never runs at the same time (a draft model's
  // runner takes its target's: one set of threads, none left polling while the other computes);
  // null: a pool of opts.n_threads of its own.
  static Result<std::unique_ptr<ModelRunner>> create(const model::Model& model,
                                                     const ModelRunnerOptions& opts,
                                                     std::shared_ptr<ThreadPool> pool = nullptr);
  const std::shared_ptr<ThreadPool>& pool() const { return pool_; }
  Result<std::span<const float>> run(const model::Batch& batch) override;
  int32_t n_vocab() const override { return static_cast<int32_t>(model_->config().n_vocab); }
  int32_t n_blocks() const override { return static_cast<int32_t>(kv_.n_blocks()); }
  int32_t block_size() const override { return static_cast<int32_t>(kv_.block_size()); }
  int32_t n_window_blocks() const override { return static_cast<int32_t>(kv_.n_blocks_window()); }
  int32_t kv_window() const override {
    return kv_.n_blocks_window() > 0 ? static_cast<int32_t>(model_->config().n_swa) : 0;
  }
  int32_t n_embd() const override { return static_cast<int32_t>(model_->config().n_embd); }
  std::span<const int64_t> experts_run() const override { return ws_.moe.experts_run; }
  int32_t n_state_slots() const override { return static_cast<int32_t>(kv_.states().n_slots()); }
  void copy_state(int32_t from, int32_t to) override { kv_.states().copy_slot(from, to); }
  const kv::KvCache& kv() const { return kv_; }
  bool has_mtp() const override { return model_->cache_has_mtp(kv_); }
  Result<std::span<const float>> run_mtp(const model::Batch& batch, std::span<const float> h) override;
  std::span<const float> hidden_rows() const override;

 private:
  ModelRunner(const model::Model& model, std::shared_ptr<ThreadPool> pool,
              std::unique_ptr<model::Backend> backend, kv::KvCache kv, model::Workspace ws);
  // After a run: n rows of ws_.mtp_hidden are the hidden rows (copied to the host where the
  // backend's memory is not).
  void keep_hidden_rows(int64_t n);
  const model::Model* model_;
  // The pool and the backend before the memory they allocated (destroyed after it).
  std::shared_ptr<ThreadPool> pool_;
  std::unique_ptr<model::Backend> backend_;
  kv::KvCache kv_;
  model::Workspace ws_;
  int64_t n_hidden_rows_ = 0;        // rows of ws_.mtp_hidden the last run wrote
  std::vector<float> hidden_host_;   // those rows, where the backend's memory is not the host's
};

}  // namespace ridge::engine
