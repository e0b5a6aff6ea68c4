// Engine construction: options checked, the runner (and a draft model's) sized, the memory
// budget for the start-up banner.
#include <algorithm>

#include "backend/registry.h"
#include "engine/engine.h"
#include "engine/scheduler.h"
#include "gguf/reader.h"

namespace ridge::engine {
namespace {

// Hybrid models: slots for the states after each draft token a step verifies (speculation).
int32_t spare_state_slots(const EngineOptions& o) {
  return o.spec != SpecMethod::kNone && o.pooling == model::Pooling::kNone ? std::min(o.spec_max, kMaxDraftRowsPerStep) : 0;
}

Status check_options(const EngineOptions& o) {
  if (o.max_batched_tokens < 1) return usage_error("engine: max-batched-tokens must be at least 1, got {}", o.max_batched_tokens);
  if (o.max_prefill_with_decodes < 0) {
    return usage_error("engine: max-prefill-with-decodes must be 0 (off) or positive, got {}",
                       o.max_prefill_with_decodes);
  }
  if (o.max_seqs < 1) return usage_error("engine: max-seqs must be at least 1, got {}", o.max_seqs);
  if (o.max_model_len < 0 || o.max_model_len > (1 << 24)) return usage_error("engine: max-model-len {} is outside 1..{}", o.max_model_len, 1 << 24);
  if (o.block_size < 1 || o.block_size > 1024) return usage_error("engine: block size {} is outside 1..1024", o.block_size);
  if (!(o.kv_ram_fraction > 0 && o.kv_ram_fraction <= 1)) return usage_error("engine: KV memory fraction {} is outside (0, 1]", o.kv_ram_fraction);
  if (o.n_threads < 1) return usage_error("engine: threads must be at least 1, got {}", o.n_threads);
  if (o.state_cache < -1 || o.state_cache > (1 << 16)) return usage_error("engine: state cache {} is outside -1..{}", o.state_cache, 1 << 16);
  if (o.state_snapshot_interval < 0) {
    return usage_error("engine: state snapshot interval {} is negative", o.state_snapshot_interval);
  }
  if (o.state_snapshot_interval > 0 && o.state_snapshot_interval < o.block_size) {
    return usage_error("engine: state snapshot interval {} is below the block size {}",
                       o.state_snapshot_interval, o.block_size);
  }
  if (o.pooling == model::Pooling::kRank) {
    return usage_error("engine: rank pooling (rerankers) is not supported yet");
  }
  // Checked with speculation off too: a request's prediction drafts with these.
  if (o.spec_max < 1 || o.spec_max > 64) return usage_error("engine: --spec-max must be 1..64, got {}", o.spec_max);
  if (o.spec_ngram < 1 || o.spec_ngram > 16) return usage_error("engine: --spec-ngram must be 1..16, got {}", o.spec_ngram);
  if (o.spec != SpecMethod::kNone && o.pooling != model::Pooling::kNone) {
    return usage_error("engine: speculative decoding does not apply to embeddings");
  }
  return ok_status();
}

// The KV pools for a budget: main blocks (every layer, or with a window space the global
// layers) and window blocks (the sliding-window layers'). The window pool gets what max_seqs
// windows and one step's tokens hold at once, no more than it pairs with main blocks.
struct KvPools {
  int64_t n_main = 0;
  int64_t n_window = 0;
};

KvPools split_kv_budget(uint64_t budget, uint64_t main_bytes, uint64_t window_bytes,
                        int64_t window_cap, int64_t main_cap) {
  KvPools p;
  if (window_bytes == 0) {
    p.n_main = std::min<int64_t>(static_cast<int64_t>(budget / main_bytes), main_cap);
    return p;
  }
  p.n_window = std::min<int64_t>(window_cap, static_cast<int64_t>(budget / (main_bytes + window_bytes)));
  p.n_main = std::min<int64_t>(main_cap, static_cast<int64_t>((budget - p.n_window * window_bytes) / main_bytes));
  p.n_window = std::min(p.n_window, p.n_main);
  return p;
}

}  // namespace

std::string format_budget(const MemoryBudget& b) {
  constexpr double kMiB = 1024.0 * 1024.0;
  std::string s = fmt::format("memory: weights {:.1f} MiB · KV pool {:.1f} MiB ({}, {:.1f} KiB per block): {} blocks "
                     "of {} tokens = {} tokens", b.weight_bytes / kMiB, b.kv_bytes / kMiB, b.kv_type,
                     b.kv_block_bytes / 1024.0, b.n_blocks, b.block_size, int64_t{b.n_blocks} * b.block_size);
  if (b.n_window_blocks > 0) {
    s += fmt::format(" in the global layers + {} blocks ({:.1f} KiB each) = {} tokens in the sliding-window "
                     "layers, which keep their last {} positions", b.n_window_blocks, b.kv_window_block_bytes / 1024.0,
                     int64_t{b.n_window_blocks} * b.block_size, b.kv_window);
  }
  s += fmt::format(" · {} sequences of max-model-len {} fit at once", b.n_full_seqs, b.max_model_len);
  if (b.n_state_slots > 0) {
    const double each = static_cast<double>(b.state_bytes) / (b.n_state_slots + b.n_spare_states + b.n_cached_states) / kMiB;
    std::string spare = b.n_spare_states > 0 ? fmt::format(" + {} for draft tokens", b.n_spare_states) : "";
    if (b.n_cached_states > 0) {
      s += fmt::format(" · recurrent state {:.1f} MiB ({} sequences{} + {} cached for the prefix cache, {:.2f} MiB each)",
                       b.state_bytes / kMiB, b.n_state_slots, spare, b.n_cached_states, each);
    } else {
      s += fmt::format(" · recurrent state {:.1f} MiB ({} sequences{} of {:.2f} MiB; prefix caching off)",
                       b.state_bytes / kMiB, b.n_state_slots, spare, each);
    }
  }
  if (b.draft_weight_bytes > 0) {
    s += fmt::format(" · draft model: weights {:.1f} MiB, KV pool {:.1f} MiB", b.draft_weight_bytes / kMiB,
                     b.draft_kv_bytes / kMiB);
  }
  return s;
}

Result<std::unique_ptr<Engine>> Engine::create(std::unique_ptr<Runner> runner,
                                               const tokenizer::Tokenizer* tokenizer,
                                               const EngineOptions& opts,
                                               std::unique_ptr<Runner> draft_runner) {
  RIDGE_RETURN_IF_ERROR(check_options(opts));
  EngineOptions o = opts;
  if ((o.spec == SpecMethod::kDraft) != (draft_runner != nullptr)) {
    return usage_error("engine: a draft model goes with speculative decoding by draft model, and only with it");
  }
  if (o.spec == SpecMethod::kMtp && !runner->has_mtp()) {
    return usage_error("engine: --spec mtp needs a model with an MTP head (Qwen3.5's nextn layers) run with it");
  }
  if (draft_runner) {
    if (draft_runner->n_vocab() != runner->n_vocab()) {
      return usage_error("engine: the draft model's output has {} rows, the model's {}", draft_runner->n_vocab(),
                         runner->n_vocab());
    }
    if (draft_runner->n_state_slots() > 0) {
      return usage_error("engine: a draft model with recurrent state is not supported yet");
    }
  }
  if (o.pooling != model::Pooling::kNone) {
    if (runner->n_embd() <= 0) return usage_error("engine: this runner cannot return embeddings");
    o.prefix_caching = false;
  }
  // Hybrid models: max_seqs live recurrent-state slots, spare ones for the states after draft
  // tokens (speculation), the rest keep states for the prefix cache (a cached prefix is usable
  // only where its state is kept); none left: prefix caching off.
  int32_t n_cached_states = 0;
  const int32_t n_spare = spare_state_slots(o);
  if (runner->n_state_slots() > 0) {
    if (runner->n_state_slots() < o.max_seqs + n_spare) {
      return usage_error("engine: {} recurrent-state slots for max-seqs {} and {} draft tokens",
                         runner->n_state_slots(), o.max_seqs, n_spare);
    }
    n_cached_states = o.prefix_caching ? runner->n_state_slots() - o.max_seqs - n_spare : 0;
    if (n_cached_states == 0) o.prefix_caching = false;
  }
  const int64_t pool_tokens = int64_t{runner->n_blocks()} * runner->block_size();
  if (o.max_model_len == 0) o.max_model_len = static_cast<int32_t>(std::min<int64_t>(4096, pool_tokens));
  if (o.max_model_len > pool_tokens) {
    return usage_error("engine: the KV pool holds {} tokens, less than max-model-len {}; give it "
                       "more memory (--kv-size) or lower --max-model-len", pool_tokens, o.max_model_len);
  }
  o.block_size = runner->block_size();
  std::unique_ptr<Engine> e(new Engine(std::move(runner), tokenizer, o));
  e->budget_.n_blocks = e->runner_->n_blocks();
  e->budget_.block_size = o.block_size;
  e->budget_.max_model_len = o.max_model_len;
  const int64_t per_seq = (o.max_model_len + o.block_size - 1) / o.block_size;
  e->budget_.n_full_seqs = static_cast<int32_t>(e->budget_.n_blocks / per_seq);
  e->budget_.kv_type = std::string(kv::kv_type_name(o.kv_type));
  if (e->runner_->n_state_slots() > 0) {
    e->budget_.n_state_slots = o.max_seqs;
    e->budget_.n_spare_states = n_spare;
    e->budget_.n_cached_states = n_cached_states;
    e->states_ = RecurrentSlots(o.max_seqs, n_spare, n_cached_states, o.block_size);
    e->states_.set_snapshot_interval(o.state_snapshot_interval / o.block_size * o.block_size);
    if (n_cached_states > 0) {
      e->scheduler_->set_prefix_filter([states = &e->states_](const kv::PrefixMatch& m, std::span<const int32_t> prompt) {
        return states->usable_blocks(m, prompt);
      });
    }
  }
  // Any generating engine that can roll a draft back verifies drafts: --spec's, or a request's
  // prediction.
  if (o.pooling == model::Pooling::kNone && (!e->states_.enabled() || n_spare > 0)) e->step_times_.emplace();
  if (draft_runner) e->drafter_ = std::make_unique<Drafter>(std::move(draft_runner), o.max_batched_tokens);
  return e;
}

Result<std::unique_ptr<Engine>> Engine::create(const model::Model& model,
                                               const tokenizer::Tokenizer* tokenizer,
                                               const EngineOptions& opts) {
  RIDGE_RETURN_IF_ERROR(check_options(opts));
  EngineOptions o = opts;
  const model::ModelConfig& cfg = model.config();
  if (o.max_model_len == 0) o.max_model_len = static_cast<int32_t>(std::min<int64_t>(cfg.n_ctx_train > 0 ? cfg.n_ctx_train : 4096, 4096));
  const bool window_space = !o.swa_full && model.has_window_space();
  const bool mtp = o.spec == SpecMethod::kMtp;
  if (mtp && !model.has_mtp()) {
    return usage_error("engine: --spec mtp needs a model with an MTP head (Qwen3.5's nextn layers); {} has {}",
                       cfg.name, cfg.has_mtp() ? "their metadata but not their tensors" : "none");
  }
  const kv::KvCacheConfig one = model.kv_config(1, o.kv_type, o.block_size, 1, window_space ? 1 : 0, mtp);
  RIDGE_RETURN_IF_ERROR(kv::kv_check_config(one).with_prefix("engine"));
  const uint64_t block_bytes = kv::kv_block_bytes(one, kv::KvSpace::kMain);
  const uint64_t window_block_bytes = kv::kv_block_bytes(one, kv::KvSpace::kWindow);
  if (block_bytes == 0) return usage_error("engine: KV type {} is not supported", kv::kv_type_name(o.kv_type));
  const int64_t per_seq = (int64_t{o.max_model_len} + o.block_size - 1) / o.block_size;
  // A window space: each sequence holds the blocks of its window and the one being written, a
  // step's tokens one more block each; one sequence alone at most its window and a whole step.
  const int64_t step_blocks = (int64_t{o.max_batched_tokens} + o.block_size - 1) / o.block_size;
  const int64_t window_per_seq = (cfg.n_swa - 1 + o.block_size - 1) / o.block_size + 2;
  const int64_t window_cap = int64_t{o.max_seqs} * window_per_seq + step_blocks;
  const int64_t window_alone = std::min(per_seq, kv::window_blocks_for(cfg.n_swa, o.max_batched_tokens, o.block_size));
  KvPools pools;
  if (o.kv_bytes > 0) {
    pools = split_kv_budget(o.kv_bytes, block_bytes, window_block_bytes, window_cap, int64_t{1} << 40);
  } else {
    RIDGE_ASSIGN_OR_RETURN(DeviceMemory * memory, backend::device_memory(o.backend));
    const uint64_t avail = memory->available_bytes();
    pools = split_kv_budget(static_cast<uint64_t>(o.kv_ram_fraction * static_cast<double>(avail)), block_bytes,
                            window_block_bytes, window_cap, per_seq * o.max_seqs);
  }
  const int64_t n_blocks = pools.n_main;
  if (n_blocks < per_seq || (window_space && pools.n_window < window_alone)) {
    const uint64_t bytes = n_blocks * block_bytes + pools.n_window * window_block_bytes;
    return usage_error("engine: a KV pool of {:.1f} MiB holds {} tokens, less than max-model-len {}{}; "
                       "raise --kv-size or lower --max-model-len", static_cast<double>(bytes) / (1 << 20),
                       n_blocks * o.block_size, o.max_model_len,
                       window_space ? fmt::format(" with its sliding windows of {} positions", cfg.n_swa) : "");
  }
  if (n_blocks > (int64_t{1} << 30)) return usage_error("engine: {} KV blocks is too many", n_blocks);
  ModelRunnerOptions ro;
  ro.n_blocks = n_blocks;
  ro.n_window_blocks = pools.n_window;
  ro.block_size = o.block_size;
  ro.kv_type = o.kv_type;
  ro.max_tokens = o.max_batched_tokens;
  ro.max_outputs = o.max_seqs;
  if (o.pooling == model::Pooling::kNone) ro.max_outputs += std::min(kMaxDraftRowsPerStep, o.max_batched_tokens);
  if (o.pooling != model::Pooling::kNone) {
    ro.embeddings = true;
    if (o.pooling == model::Pooling::kMean) ro.max_outputs = o.max_batched_tokens;  // every row
  }
  ro.max_context = o.max_model_len;
  ro.n_threads = o.n_threads;
  ro.backend = o.backend;
  ro.n_state_slots = o.max_seqs + spare_state_slots(o);
  ro.mtp = mtp;
  if (o.prefix_caching && o.pooling == model::Pooling::kNone) ro.n_state_slots += o.state_cache < 0 ? o.max_seqs : o.state_cache;
  RIDGE_ASSIGN_OR_RETURN(std::unique_ptr<ModelRunner> runner, ModelRunner::create(model, ro));
  const uint64_t kv_total = runner->kv().total_bytes();
  const uint64_t state_total = runner->kv().states().total_bytes();
  std::unique_ptr<ModelRunner> draft_runner;
  if (o.spec == SpecMethod::kDraft) {
    if (o.draft_model == nullptr) return usage_error("engine: speculative decoding by draft model needs the draft model");
    // As many tokens as the target's pool, one row per sequence and step.
    ModelRunnerOptions dro = ro;
    dro.max_outputs = o.max_seqs;
    dro.n_window_blocks = 0;
    RIDGE_RETURN_IF_ERROR(kv::kv_check_config(o.draft_model->kv_config(1, o.kv_type, o.block_size)).with_prefix("engine: draft model"));
    RIDGE_ASSIGN_OR_RETURN(draft_runner, ModelRunner::create(*o.draft_model, dro, runner->pool()));
  }
  const uint64_t draft_kv_total = draft_runner ? draft_runner->kv().total_bytes() : 0;
  RIDGE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> e, create(std::move(runner), tokenizer, o, std::move(draft_runner)));
  if (mtp) {  // a draft step of the head streams its block, eh_proj and the head
    e->draft_ratio_model_ = static_cast<double>(model.weights().mtp.matrix_bytes) /
                            static_cast<double>(std::max<uint64_t>(1, model.weights().matrix_bytes));
  }
  if (o.draft_model) {
    e->draft_ratio_model_ = static_cast<double>(o.draft_model->file().file_size()) /
                            static_cast<double>(std::max<uint64_t>(1, model.file().file_size()));
  }
  e->budget_.weight_bytes = model.file().file_size();
  e->budget_.kv_bytes = kv_total;
  e->budget_.kv_block_bytes = block_bytes;
  if (window_space) {
    e->budget_.n_window_blocks = static_cast<int32_t>(pools.n_window);
    e->budget_.kv_window_block_bytes = window_block_bytes;
    e->budget_.kv_window = static_cast<int32_t>(cfg.n_swa);
  }
  e->budget_.state_bytes = state_total;
  if (o.draft_model) {
    e->budget_.draft_weight_bytes = o.draft_model->file().file_size();
    e->budget_.draft_kv_bytes = draft_kv_total;
  }
  if (auto types = model::weight_types_from_gguf(model.file()); types.ok()) {
    auto mc = model::model_cost(cfg, *types, o.kv_type);
    if (mc.ok()) e->cost_ = std::move(mc).value();
  }
  return e;
}

}  // namespace ridge::engine
