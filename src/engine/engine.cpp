// Engine construction, request intake (any thread), the loop and statistics. The step itself is
// in engine_step.cpp.
#include "engine/engine.h"

#include <fstream>
#include <sstream>

#include "base/timer.h"
#include "engine/engine_inbox.h"
#include "engine/scheduler.h"
#include "sampling/draft_draw.h"
#include "base/meminfo.h"
#include "gguf/reader.h"

namespace ridge::engine {
namespace {

std::optional<model::KvType> cost_kv_type(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return model::KvType::kF32;
    case GgmlType::kF16: return model::KvType::kF16;
    case GgmlType::kBF16: return model::KvType::kBF16;
    case GgmlType::kQ8_0: return model::KvType::kQ8_0;
    default: return std::nullopt;
  }
}

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

}  // namespace

std::string_view finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kError: return "error";
    case FinishReason::kNone: break;
  }
  return "";
}

std::string format_budget(const MemoryBudget& b) {
  constexpr double kMiB = 1024.0 * 1024.0;
  std::string s = fmt::format("memory: weights {:.1f} MiB · KV pool {:.1f} MiB ({}, {:.1f} KiB per block): {} blocks "
                     "of {} tokens = {} tokens · {} sequences of max-model-len {} fit at once",
                     b.weight_bytes / kMiB, b.kv_bytes / kMiB, b.kv_type, b.kv_block_bytes / 1024.0,
                     b.n_blocks, b.block_size, int64_t{b.n_blocks} * b.block_size, b.n_full_seqs,
                     b.max_model_len);
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
  return s;
}

Engine::Engine(std::unique_ptr<Runner> runner, const tokenizer::Tokenizer* tokenizer,
               const EngineOptions& opts)
    : opts_(opts), runner_(std::move(runner)), tokenizer_(tokenizer), inbox_(std::make_unique<Inbox>()) {
  scheduler_ = std::make_unique<Scheduler>(
      SchedulerOptions{opts_.max_batched_tokens, opts_.max_seqs, opts_.max_prefill_with_decodes},
      kv::BlockManager(runner_->n_blocks(), runner_->block_size(), opts_.prefix_caching));
}

Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::create(std::unique_ptr<Runner> runner,
                                               const tokenizer::Tokenizer* tokenizer,
                                               const EngineOptions& opts,
                                               std::unique_ptr<Runner> draft_runner) {
  RIDGE_RETURN_IF_ERROR(check_options(opts));
  EngineOptions o = opts;
  if ((o.spec == SpecMethod::kDraft) != (draft_runner != nullptr)) {
    return usage_error("engine: a draft model goes with speculative decoding by draft model, and only with it");
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
  e->budget_.kv_type = std::string(ggml_type_name(o.kv_type));
  if (e->runner_->n_state_slots() > 0) {
    e->budget_.n_state_slots = o.max_seqs;
    e->budget_.n_spare_states = n_spare;
    e->budget_.n_cached_states = n_cached_states;
    e->states_ = RecurrentSlots(o.max_seqs, n_spare, n_cached_states, o.block_size);
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
  RIDGE_RETURN_IF_ERROR(kv::kv_check_config(model.kv_config(1, o.kv_type, o.block_size)).with_prefix("engine"));
  const uint64_t block_bytes = kv::kv_block_bytes(model.kv_config(1, o.kv_type, o.block_size));
  if (block_bytes == 0) return usage_error("engine: KV type {} is not supported", ggml_type_name(o.kv_type));
  const int64_t per_seq = (int64_t{o.max_model_len} + o.block_size - 1) / o.block_size;
  int64_t n_blocks = 0;
  if (o.kv_bytes > 0) {
    n_blocks = static_cast<int64_t>(o.kv_bytes / block_bytes);
  } else {
    const uint64_t avail = meminfo_bytes("MemAvailable");
    n_blocks = std::min<int64_t>(static_cast<int64_t>(o.kv_ram_fraction * static_cast<double>(avail) / static_cast<double>(block_bytes)),
                                 per_seq * o.max_seqs);
  }
  if (n_blocks < per_seq) {
    return usage_error("engine: a KV pool of {:.1f} MiB holds {} tokens, less than max-model-len {}; "
                       "raise --kv-size or lower --max-model-len", static_cast<double>(n_blocks * block_bytes) / (1 << 20),
                       n_blocks * o.block_size, o.max_model_len);
  }
  if (n_blocks > (int64_t{1} << 30)) return usage_error("engine: {} KV blocks is too many", n_blocks);
  ModelRunnerOptions ro;
  ro.n_blocks = n_blocks;
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
  ro.n_state_slots = o.max_seqs + spare_state_slots(o);
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
    RIDGE_RETURN_IF_ERROR(kv::kv_check_config(o.draft_model->kv_config(1, o.kv_type, o.block_size)).with_prefix("engine: draft model"));
    RIDGE_ASSIGN_OR_RETURN(draft_runner, ModelRunner::create(*o.draft_model, dro, runner->pool()));
  }
  RIDGE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> e, create(std::move(runner), tokenizer, o, std::move(draft_runner)));
  if (o.draft_model) {
    e->draft_ratio_model_ = static_cast<double>(o.draft_model->file().file_size()) /
                            static_cast<double>(std::max<uint64_t>(1, model.file().file_size()));
  }
  e->budget_.weight_bytes = model.file().file_size();
  e->budget_.kv_bytes = kv_total;
  e->budget_.kv_block_bytes = block_bytes;
  e->budget_.state_bytes = state_total;
  if (auto kt = cost_kv_type(o.kv_type)) {
    auto types = model::weight_types_from_gguf(model.file());
    if (types.ok()) {
      auto mc = model::model_cost(cfg, *types, *kt);
      if (mc.ok()) e->cost_ = std::move(mc).value();
    }
  }
  return e;
}

Result<RequestId> Engine::add_request(Request req) {
  auto seq = std::make_unique<Sequence>();
  if (!req.prompt_tokens.empty()) {
    seq->tokens = std::move(req.prompt_tokens);
  } else if (!req.prompt_text.empty()) {
    if (tokenizer_ == nullptr) return usage_error("request: a text prompt needs a tokenizer; give token ids");
    seq->tokens = tokenizer_->encode(req.prompt_text, req.add_special, req.parse_special);
  }
  const int32_t n_vocab = runner_->n_vocab();
  if (seq->tokens.empty()) return usage_error("request: empty prompt");
  if (seq->tokens.size() > static_cast<size_t>(opts_.max_model_len)) {
    return usage_error("request: prompt of {} tokens exceeds max-model-len {}", seq->tokens.size(), opts_.max_model_len);
  }
  for (size_t i = 0; i < seq->tokens.size(); ++i) {
    if (seq->tokens[i] < 0 || seq->tokens[i] >= n_vocab) {
      return usage_error("request: prompt token {} at index {} is outside the vocabulary (0..{})", seq->tokens[i], i, n_vocab - 1);
    }
  }
  for (int32_t t : req.stop_token_ids) {
    if (t < 0 || t >= n_vocab) return usage_error("request: stop token id {} is outside the vocabulary", t);
  }
  if (req.prediction.size() > static_cast<size_t>(opts_.max_model_len)) {
    return usage_error("request: a prediction of {} tokens exceeds max-model-len {}", req.prediction.size(), opts_.max_model_len);
  }
  for (int32_t t : req.prediction) {
    if (t < 0 || t >= n_vocab) return usage_error("request: prediction token {} is outside the vocabulary", t);
  }
  if (req.params.max_tokens == 0) return usage_error("request: max_tokens must be at least 1 (or -1)");
  if (req.grammar) {
    if (tokenizer_ == nullptr) return usage_error("request: a grammar needs the engine's tokenizer");
    if (req.ignore_eos) return usage_error("request: a grammar cannot be combined with ignore_eos");
    seq->matcher.emplace(grammar_cache()->matcher(req.grammar));
  }
  RIDGE_ASSIGN_OR_RETURN(sampling::Sampler sampler, sampling::Sampler::create(req.params, n_vocab));
  seq->n_prompt = static_cast<int32_t>(seq->tokens.size());
  const int32_t room = opts_.max_model_len - seq->n_prompt;
  seq->max_tokens = req.params.max_tokens < 0 ? std::max(room, 1) : req.params.max_tokens;
  seq->priority = req.priority;
  seq->stats.n_prompt_tokens = seq->n_prompt;
  if (tokenizer_ != nullptr) seq->detok.emplace(*tokenizer_);
  if (!req.params.stop.empty()) seq->stop.emplace(req.params.stop);
  seq->sampler.emplace(std::move(sampler));
  if (drafter_ && opts_.spec_rejection && !req.params.greedy() && !req.grammar) {
    seq->draft_sampler.emplace(sampling::draft_sampling_params(req.params), n_vocab);
  }
  seq->stop_token_ids = std::move(req.stop_token_ids);
  if (step_times_) seq->prediction = std::move(req.prediction);
  seq->ignore_eos = req.ignore_eos;
  seq->n_logprobs = req.n_logprobs;
  seq->on_output = std::move(req.on_output);

  std::lock_guard lock(inbox_->mu);
  if (inbox_->stopping) return usage_error("request: the engine is shutting down");
  const RequestId id = inbox_->next_id++;
  seq->id = id;
  seq->arrival_order = static_cast<uint64_t>(id);
  seq->stats.arrival_time = now_seconds();
  inbox_->new_seqs.push_back(std::move(seq));
  inbox_->n_live += 1;
  inbox_->cv.notify_all();
  return id;
}

grammar::TokenResolver grammar_token_resolver(const tokenizer::Tokenizer& tok) {
  grammar::TokenResolver r;
  r.n_vocab = tok.n_vocab();
  r.find = [&tok](std::string_view text) -> std::optional<int32_t> {
    if (const int32_t id = tok.find_token(text); id >= 0) return id;
    const std::vector<int32_t> ids = tok.encode(text, /*add_special=*/false, /*parse_special=*/true);
    if (ids.size() == 1) return ids[0];
    return std::nullopt;
  };
  return r;
}

std::shared_ptr<grammar::GrammarCache> Engine::grammar_cache() {
  if (tokenizer_ == nullptr) return nullptr;
  auto idx = token_index();
  std::lock_guard lock(token_index_mu_);
  if (!grammar_cache_) {
    grammar_cache_ =
        std::make_shared<grammar::GrammarCache>(std::move(idx), grammar_token_resolver(*tokenizer_));
  }
  return grammar_cache_;
}

std::shared_ptr<const grammar::TokenIndex> Engine::token_index() {
  std::lock_guard lock(token_index_mu_);
  if (!token_index_) {
    // Control tokens are never text a grammar could match (only a grammar's token element names
    // one, by id); every other token is its bytes.
    const int32_t n = tokenizer_->n_vocab();
    std::vector<std::string> bytes(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
      if (!tokenizer_->is_control(i)) bytes[static_cast<size_t>(i)] = tokenizer_->token_to_piece(i);
    }
    const auto eog = tokenizer_->eog_ids();
    token_index_ = std::make_shared<const grammar::TokenIndex>(
        std::move(bytes), std::vector<int32_t>(eog.begin(), eog.end()));
  }
  return token_index_;
}

void Engine::abort(RequestId id) {
  std::lock_guard lock(inbox_->mu);
  inbox_->aborts.push_back(id);
  inbox_->cv.notify_all();
}

void Engine::stop(bool drain) {
  std::lock_guard lock(inbox_->mu);
  inbox_->stopping = true;
  inbox_->drain = inbox_->drain_set ? inbox_->drain && drain : drain;
  inbox_->drain_set = true;
  inbox_->cv.notify_all();
}

bool Engine::has_work() const {
  std::lock_guard lock(inbox_->mu);
  return inbox_->n_live > 0;
}

EngineStats Engine::stats() const {
  std::lock_guard lock(inbox_->mu);
  return inbox_->snapshot;
}

void Engine::run_loop() {
  for (;;) {
    {
      std::unique_lock lock(inbox_->mu);
      inbox_->cv.wait(lock, [&] {
        return inbox_->stopping || !inbox_->new_seqs.empty() || !inbox_->aborts.empty() ||
               !scheduler_->empty();
      });
      if (inbox_->stopping && inbox_->n_live == 0) return;
    }
    step();
  }
}

void Engine::take_inbox() {
  std::deque<std::unique_ptr<Sequence>> fresh;
  std::vector<RequestId> aborts;
  bool abort_all = false;
  {
    std::lock_guard lock(inbox_->mu);
    fresh.swap(inbox_->new_seqs);
    aborts.swap(inbox_->aborts);
    abort_all = inbox_->stopping && !inbox_->drain;
  }
  for (auto& s : fresh) scheduler_->add(std::move(s));
  for (RequestId id : aborts) {
    if (Sequence* s = scheduler_->find(id)) finish(*s, FinishReason::kAbort);
  }
  if (abort_all) {
    for (RequestId id : scheduler_->ids()) finish(*scheduler_->find(id), FinishReason::kAbort);
  }
}

void Engine::publish_stats() {
  const kv::BlockPool& pool = scheduler_->blocks().pool();
  stats_.n_running = scheduler_->n_running();
  stats_.n_waiting = scheduler_->n_waiting();
  stats_.kv_blocks_total = pool.n_blocks();
  stats_.kv_blocks_used = pool.n_used();
  if (drafter_) {
    stats_.draft_blocks_used = drafter_->n_blocks_used();
    stats_.n_draft_steps = drafter_->n_steps();
  }
  stats_.kv_blocks_free = pool.n_free();
  stats_.prefix_cache_hit_rate = pool.stats().hit_rate();
  stats_.n_cached_tokens = pool.stats().n_hit_tokens;
  stats_.n_preemptions = scheduler_->n_preemptions();
  stats_.n_state_snapshots = states_.cache().stats().n_taken;
  stats_.n_state_hits = states_.cache().stats().n_hits;
  std::lock_guard lock(inbox_->mu);
  inbox_->snapshot = stats_;
}

}  // namespace ridge::engine
