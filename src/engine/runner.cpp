#include "engine/runner.h"

#include "backend/registry.h"

namespace ridge::engine {

ModelRunner::ModelRunner(const model::Model& model, kv::KvCache kv, model::Workspace ws,
                         std::shared_ptr<ThreadPool> pool, std::unique_ptr<model::Backend> backend)
    : model_(&model),
      kv_(std::move(kv)),
      ws_(std::move(ws)),
      pool_(std::move(pool)),
      backend_(std::move(backend)) {}

Result<std::unique_ptr<ModelRunner>> ModelRunner::create(const model::Model& model,
                                                         const ModelRunnerOptions& o,
                                                         std::shared_ptr<ThreadPool> pool) {
  if (o.n_threads < 1) return usage_error("engine: threads must be at least 1, got {}", o.n_threads);
  RIDGE_ASSIGN_OR_RETURN(kv::KvCache kv,
                         kv::KvCache::create(model.kv_config(o.n_blocks, o.kv_type, o.block_size,
                                                             o.n_state_slots, o.n_window_blocks)));
  model::WorkspaceLimits lim;
  lim.max_tokens = o.max_tokens;
  lim.max_outputs = std::min(o.max_outputs, o.max_tokens);
  lim.max_context = o.max_context;
  lim.n_threads = o.n_threads;
  lim.block_size = o.block_size;
  lim.hidden_outputs = o.embeddings;
  RIDGE_ASSIGN_OR_RETURN(model::Workspace ws, model::Workspace::create(model.config(), lim));
  if (!pool) pool = std::make_shared<ThreadPool>(o.n_threads);
  RIDGE_ASSIGN_OR_RETURN(std::unique_ptr<model::Backend> backend,
                         backend::create_backend(o.backend, {&model.kernels(), pool.get()}));
  return std::unique_ptr<ModelRunner>(new ModelRunner(model, std::move(kv), std::move(ws),
                                                      std::move(pool), std::move(backend)));
}

Result<std::span<const float>> ModelRunner::run(const model::Batch& batch) {
  return model_->forward(batch, kv_, ws_, *backend_);
}

}  // namespace ridge::engine
