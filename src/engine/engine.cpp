// Engine request intake (any thread), the loop and statistics. Construction is in
// engine_create.cpp, the step in engine_step.cpp.
#include "engine/engine.h"

#include <fstream>
#include <sstream>

#include "base/timer.h"
#include "engine/engine_inbox.h"
#include "engine/scheduler.h"
#include "sampling/draft_draw.h"

namespace ridge::engine {

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

Engine::Engine(std::unique_ptr<Runner> runner, const tokenizer::Tokenizer* tokenizer,
               const EngineOptions& opts)
    : opts_(opts), runner_(std::move(runner)), tokenizer_(tokenizer), inbox_(std::make_unique<Inbox>()) {
  scheduler_ = std::make_unique<Scheduler>(
      SchedulerOptions{opts_.max_batched_tokens, opts_.max_seqs, opts_.max_prefill_with_decodes},
      kv::BlockManager(runner_->n_blocks(), runner_->block_size(), opts_.prefix_caching,
                       {runner_->n_window_blocks(), runner_->kv_window()}));
}

Engine::~Engine() = default;

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
  if ((drafter_ || opts_.spec == SpecMethod::kMtp) && opts_.spec_rejection && !req.params.greedy() && !req.grammar) {
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
  if (const kv::BlockPool* w = scheduler_->blocks().window_pool()) {
    stats_.kv_window_blocks_total = w->n_blocks();
    stats_.kv_window_blocks_used = w->n_used();
  }
  stats_.prefix_cache_hit_rate = pool.stats().hit_rate();
  stats_.n_cached_tokens = pool.stats().n_hit_tokens;
  stats_.n_preemptions = scheduler_->n_preemptions();
  stats_.n_state_snapshots = states_.cache().stats().n_taken;
  stats_.n_state_hits = states_.cache().stats().n_hits;
  std::lock_guard lock(inbox_->mu);
  inbox_->snapshot = stats_;
}

}  // namespace ridge::engine
