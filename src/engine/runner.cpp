#include "engine/runner.h"

#include "backend/registry.h"

namespace ridge::engine {

ModelRunner::ModelRunner(const model::Model& model, std::shared_ptr<ThreadPool> pool,
                         std::unique_ptr<model::Backend> backend, kv::KvCache kv,
                         model::Workspace ws)
    : model_(&model),
      pool_(std::move(pool)),
      backend_(std::move(backend)),
      kv_(std::move(kv)),
      ws_(std::move(ws)) {}

Result<std::unique_ptr<ModelRunner>> ModelRunner::create(const model::Model& model,
                                                         const ModelRunnerOptions& o,
                                                         std::shared_ptr<ThreadPool> pool) {
  if (o.n_threads < 1) return usage_error("engine: threads must be at least 1, got {}", o.n_threads);
  if (o.mtp && !model.has_mtp()) {
    return usage_error("engine: MTP drafts need a model with an MTP head (nextn layers and their "
                       "tensors); {} has none", model.config().name);
  }
  if (!pool) pool = std::make_shared<ThreadPool>(o.n_threads);
  RIDGE_ASSIGN_OR_RETURN(std::unique_ptr<model::Backend> backend,
                         backend::create_backend(o.backend, {&model.kernels(), pool.get(), 0, &model.config()}));
  RIDGE_RETURN_IF_ERROR(backend->load_weights(model.weights()).with_prefix("engine"));
  RIDGE_ASSIGN_OR_RETURN(kv::KvCache kv,
                         kv::KvCache::create(model.kv_config(o.n_blocks, o.kv_type, o.block_size,
                                                             o.n_state_slots, o.n_window_blocks, o.mtp),
                                             backend->memory()));
  model::WorkspaceLimits lim;
  lim.max_tokens = o.max_tokens;
  lim.max_outputs = std::min(o.max_outputs, o.max_tokens);
  lim.max_context = o.max_context;
  lim.n_threads = o.n_threads;
  lim.block_size = o.block_size;
  lim.hidden_outputs = o.embeddings;
  lim.mtp = o.mtp;
  RIDGE_ASSIGN_OR_RETURN(model::Workspace ws,
                         model::Workspace::create(model.config(), lim, backend->memory()));
  return std::unique_ptr<ModelRunner>(new ModelRunner(model, std::move(pool), std::move(backend),
                                                      std::move(kv), std::move(ws)));
}

void ModelRunner::keep_hidden_rows(int64_t n) {
  n_hidden_rows_ = n;
  DeviceMemory& mem = backend_->memory();
  if (mem.host_visible() || n == 0) return;
  hidden_host_.resize(static_cast<size_t>(n * model_->config().n_embd));
  mem.to_host(hidden_host_.data(), ws_.mtp_hidden.data(), hidden_host_.size() * sizeof(float));
}

Result<std::span<const float>> ModelRunner::run(const model::Batch& batch) {
  const Result<std::span<const float>> out = model_->forward(batch, kv_, ws_, *backend_);
  keep_hidden_rows(out.ok() && has_mtp() ? batch.n_tokens() : 0);
  return out;
}

Result<std::span<const float>> ModelRunner::run_mtp(const model::Batch& batch, std::span<const float> h) {
  const Result<std::span<const float>> out = model_->forward_mtp(batch, h, kv_, ws_, *backend_);
  keep_hidden_rows(out.ok() ? batch.n_tokens() : 0);
  return out;
}

std::span<const float> ModelRunner::hidden_rows() const {
  const auto n = static_cast<size_t>(n_hidden_rows_ * model_->config().n_embd);
  if (!backend_->memory().host_visible()) return std::span<const float>(hidden_host_).first(n);
  return std::span<const float>(ws_.mtp_hidden.data(), n);
}

}  // namespace ridge::engine
