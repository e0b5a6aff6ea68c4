// Engine: continuous batching over one model. Requests come in from any thread; one engine
// thread calls step() (or run_loop()), and each step runs one flat batch holding every running
// decode plus prompt chunks up to the token budget (see scheduler.h for the policy).
//
//   auto eng = Engine::create(model, &tokenizer, opts);      // prints nothing; see budget()
//   std::thread t([&] { eng->run_loop(); });
//   auto id = eng->add_request(std::move(req));              // Result<RequestId>, any thread
//   ... req.on_output gets token/text events, then exactly one finished event ...
//   eng->abort(*id);                                         // any thread
//   eng->stop(/*drain=*/true); t.join();
//
// Thread safety: add_request, abort, stop, has_work, stats and budget may be called from any
// thread. step() and run_loop() must be called from one thread at a time. Callbacks run on the
// engine thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "engine/drafter.h"
#include "engine/request.h"
#include "grammar/grammar_cache.h"
#include "grammar/token_index.h"
#include "engine/recurrent_slots.h"
#include "engine/runner.h"
#include "model/cost.h"
#include "model/model.h"
#include "spec/draft_length.h"
#include "tokenizer/tokenizer.h"

namespace ridge::engine {

class Scheduler;
struct Sequence;
struct SchedulerOutput;
struct ScheduledChunk;

enum class SpecMethod { kNone, kNgram, kDraft, kMtp };

struct EngineOptions {
  int32_t max_batched_tokens = 512;  // tokens per step (decodes + prompt chunks)
  int32_t max_seqs = 64;             // running sequences at most
  int32_t max_prefill_with_decodes = 16;  // prompt tokens per step while others decode (0: off)
  int32_t max_model_len = 0;         // prompt + completion; 0: min(training context, 4096)
  uint64_t kv_bytes = 0;             // KV pool size; 0: kv_ram_fraction of available memory,
                                     // at most what max_seqs sequences of max_model_len need
  double kv_ram_fraction = 0.25;
  kv::KvType kv_type = kv::KvType::kF16;
  int32_t block_size = 16;
  bool prefix_caching = true;
  // Hybrid models (recurrent state): states kept for the prefix cache, each as large as a
  // sequence's (engine/recurrent_slots.h); -1: as many as max_seqs; 0: prefix caching off.
  int32_t state_cache = -1;
  // Models with sliding-window and global layers: false keeps the windowed layers' K/V in a pool
  // of their own, sized for max_seqs windows and one step, whose blocks go back once out of
  // every window (a cached prefix is then usable up to where its window's blocks are still
  // cached); true keeps every position's K/V in every layer, as for a dense model (--swa-full).
  bool swa_full = false;
  // Hybrid models: also keep the state every N prompt tokens (rounded down to whole blocks; 0:
  // only at the points docs/hybrid.md lists), so that the first prompt that shares part of an
  // earlier one starts part way in.
  int32_t state_snapshot_interval = 0;
  int n_threads = 1;
  // The backend that runs the forward (backend/registry.h); the KV pool's default size is a
  // fraction of its device's available memory.
  std::string backend = "cpu";
  // Not kNone: an embedding engine. Every request's prompt is run once and pooled into one
  // vector (RequestOutput::embedding, L2-normalised); nothing is generated. Prefix caching is
  // off (pooling needs every pooled row computed).
  model::Pooling pooling = model::Pooling::kNone;
  // Speculative decoding (docs/speculative.md). kNgram: each decoding sequence may propose the
  // continuation of the latest earlier match of its last 1..spec_ngram tokens, up to spec_max
  // tokens, verified in the same step as everyone else's work; the draft lengths are chosen per
  // step from each sequence's acceptance rate and the step's cost (the cost model on the roof
  // below, corrected by measured step times), so speculation turns itself off where it does not
  // pay. Output is unchanged: every token is still sampled from plain decoding's logits.
  // kDraft: a draft model (draft_model, same vocabulary, its own KV pool of as many tokens)
  // proposes greedy drafts, for all drafting sequences at once in batched draft steps; the step
  // plans one draft depth for them, its draft steps' time counted. kMtp: the model's own MTP head
  // (Qwen3.5's nextn block, model/mtp.cpp) drafts as a draft model would, its KV a layer of the
  // model's cache, fed by every step.
  SpecMethod spec = SpecMethod::kNone;
  const model::Model* draft_model = nullptr;  // kDraft; outlives the engine
  // kDraft, requests at temperature > 0: the draft model samples its drafts under the request's
  // sampler settings and each is kept with probability min(1, p/q) (Sampler::verify_draft): the
  // same distribution as plain decoding, more drafts kept, but not the seed's token stream.
  // false: greedy drafts, kept when the request's own draw picks them (seed for seed).
  bool spec_rejection = true;
  int32_t spec_max = 8;
  int32_t spec_ngram = 3;
  double roof_bandwidth = 0;  // bytes/s (ridge probe); 0: step times in bytes until measured
  double roof_flops = 0;      // FLOP/s; 0: no compute roof
  // false: every proposal is verified whole (up to spec_max and the caps), with no cost rule:
  // for tests whose counts must not depend on timing, and to measure a proposer.
  bool spec_cost_rule = true;
};

// Draft rows one step verifies at most (the runner's logits rows beyond one per sequence).
inline constexpr int32_t kMaxDraftRowsPerStep = 64;

// What the memory went to, for the start-up banner (format_budget).
struct MemoryBudget {
  uint64_t weight_bytes = 0;
  uint64_t kv_bytes = 0;          // whole pool
  uint64_t kv_block_bytes = 0;    // one block, all layers (with a window space: the global ones), K and V
  int32_t n_blocks = 0;
  // A window space (the sliding-window layers' K/V apart, kept only for their window): its
  // blocks, one block's bytes, and the window in positions; 0 without one.
  int32_t n_window_blocks = 0;
  uint64_t kv_window_block_bytes = 0;
  int32_t kv_window = 0;
  int32_t block_size = 0;
  int32_t max_model_len = 0;
  int32_t n_full_seqs = 0;        // sequences of max_model_len that fit at once
  std::string kv_type;
  uint64_t state_bytes = 0;       // recurrent state of linear-attention layers (hybrid models)
  int32_t n_state_slots = 0;      // sequences it holds at once (max_seqs)
  int32_t n_spare_states = 0;     // and spare ones for the states after draft tokens
  int32_t n_cached_states = 0;    // and states kept for the prefix cache
  uint64_t draft_weight_bytes = 0;  // a draft model (speculation): its weights
  uint64_t draft_kv_bytes = 0;      // and its own KV pool
};
std::string format_budget(const MemoryBudget& b);

// Resolves a grammar's token references against the tokenizer's vocabulary: a token whose
// text is exactly the given text (special tokens included), else text that encodes (special
// text parsed) to exactly one token, as llama.cpp resolves `<text>`.
grammar::TokenResolver grammar_token_resolver(const tokenizer::Tokenizer& tok);

struct EngineStats {
  int32_t n_running = 0;
  int32_t n_waiting = 0;
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_used = 0;
  int32_t kv_blocks_free = 0;    // includes cached blocks that may be evicted
  int32_t kv_window_blocks_total = 0;  // the window space's (0: none)
  int32_t kv_window_blocks_used = 0;
  double prefix_cache_hit_rate = 0;  // hit tokens / looked-up prompt tokens
  int64_t n_steps = 0;
  int64_t n_preemptions = 0;
  int64_t n_requests_finished = 0;
  int64_t n_prompt_tokens = 0;     // prompt (and recomputed) tokens run through the model
  int64_t n_cached_tokens = 0;     // prompt tokens taken from the prefix cache
  int64_t n_generated_tokens = 0;
  double bytes_moved = 0;          // cost model (model/cost.h), summed over steps
  double busy_seconds = 0;         // time inside step() that ran a batch
  int64_t n_draft_tokens = 0;      // speculative decoding: draft tokens verified
  int64_t n_accepted_tokens = 0;   // of them, accepted
  int64_t n_draft_tokens_mixed = 0;  // of the drafts, those verified beside a prompt chunk
  int64_t n_draft_steps = 0;       // a draft model's forward steps (kDraft)
  double draft_seconds = 0;        // spent in them
  int32_t draft_blocks_used = 0;   // its KV blocks holding sequences' text
  int64_t n_state_snapshots = 0;   // hybrid models: recurrent states kept for the prefix cache
  int64_t n_state_hits = 0;        // prompts that started from one
};

class Engine {
 public:
  // With a model: builds a ModelRunner with a KV pool sized by opts (see MemoryBudget).
  // tokenizer may be null (then requests must give tokens and events carry no text).
  static Result<std::unique_ptr<Engine>> create(const model::Model& model,
                                                const tokenizer::Tokenizer* tokenizer,
                                                const EngineOptions& opts);
  // With any runner (tests). opts.kv_bytes is ignored: the runner's blocks are the pool.
  // draft_runner: the draft model's runner, with opts.spec == kDraft (opts.draft_model unused).
  static Result<std::unique_ptr<Engine>> create(std::unique_ptr<Runner> runner,
                                                const tokenizer::Tokenizer* tokenizer,
                                                const EngineOptions& opts,
                                                std::unique_ptr<Runner> draft_runner = nullptr);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates and queues a request; usage error (nothing queued) for an empty prompt, a prompt
  // longer than max_model_len, token ids outside the vocabulary, text without a tokenizer, bad
  // sampling values, or after stop(). Thread-safe.
  Result<RequestId> add_request(Request req);
  // Ends a request with FinishReason::kAbort at the next step (its blocks are freed). Unknown or
  // finished ids are ignored. Thread-safe.
  void abort(RequestId id);

  // One engine iteration: takes new requests and aborts, schedules, runs one batch, samples,
  // streams events. Returns false when there was nothing to do.
  bool step();
  // Steps until stop(); sleeps while there is no work.
  void run_loop();
  // drain: finish every request first (new ones are rejected); otherwise abort them all.
  // run_loop() returns afterwards. Thread-safe.
  void stop(bool drain);
  // Requests that are queued, waiting or running.
  bool has_work() const;

  EngineStats stats() const;
  const MemoryBudget& budget() const { return budget_; }
  // Compiled grammars shared by the requests that use the same grammar text (their state
  // caches too): a Request whose grammar came from here gets a matcher on the shared cache.
  // Built at the first call (with the vocabulary index); null without a tokenizer. Thread-safe.
  std::shared_ptr<grammar::GrammarCache> grammar_cache();
  const EngineOptions& options() const { return opts_; }

 private:
  Engine(std::unique_ptr<Runner> runner, const tokenizer::Tokenizer* tokenizer,
         const EngineOptions& opts);
  struct Inbox;
  void take_inbox();
  // Final event (reason), then the sequence is removed and its blocks freed.
  void finish(Sequence& seq, FinishReason reason, std::string error = {});
  void deliver(Sequence& seq, RequestOutput out);
  void process_outputs(const SchedulerOutput& out, std::span<const float> logits);
  // Embedding engines: adds the step's hidden rows to their sequences' pooled vectors and
  // finishes the sequences whose prompt is complete.
  void process_embeddings(const SchedulerOutput& out, std::span<const float> hidden);
  // Whether the token at `pos` of a chunk ending at `end` (need_logits: the prompt's end) is
  // a row this step must return.
  bool needs_row(int32_t pos, int32_t end, bool chunk_ends_prompt) const;
  // Appends a sampled token; returns why the sequence ends (kNone: it goes on) and its text.
  FinishReason append_token(Sequence& seq, int32_t token, std::string& text);
  std::string flush_text(Sequence& seq);
  void publish_stats();
  // The vocabulary as the grammar matcher sees it, built at the first constrained request.
  std::shared_ptr<const grammar::TokenIndex> token_index();
  // Samples seq's next token under its grammar (kError with `error` set when none may follow).
  int32_t sample_constrained(Sequence& seq, std::span<const float> logits, RequestOutput& ev);
  // Whether every chunk of the step decodes one token (and maybe verifies a draft): the steps
  // speculation drafts in and times (a step with a prompt chunk is another regime).
  static bool decodes_only(const SchedulerOutput& out);
  // Speculative decoding: proposes drafts for the step's decoding sequences and adds the ones
  // that pay (spec::allocate_drafts on the step's predicted time) to `out`. decode_only: the
  // step's time is predicted from measured decode steps; otherwise (a prompt chunk in the step,
  // within the token budget left) from the cost model alone.
  void add_drafts(SchedulerOutput& out, bool decode_only);
  // The draft lengths for the step: spec::allocate_drafts on its predicted time, and with a
  // draft model the best depth of draft steps too (model[j]: sequence j drafts with it).
  std::vector<int64_t> plan_drafts(std::span<const double> alpha, std::span<const int64_t> max_len,
                                   std::span<const uint8_t> model, double n_emitting,
                                   const std::function<double(int64_t)>& step_time) const;
  // A draft model's step over a decode-only target step (measured, else the weights' ratio).
  double draft_step_ratio() const;
  // Draft rows one step verifies at most (a hybrid model: one spare state slot per row).
  int32_t max_draft_rows() const { return states_.enabled() ? states_.n_spare() : kMaxDraftRowsPerStep; }
  // Runs the draft model for the model-drafted sequences with k[j] > 0 and sets their drafts
  // (k[j] cut to what it proposed; nothing where it failed), timing its steps.
  // kMtp: the head's drafts for the chunks with by_head set, their slots reserved first (the
  // head writes its K/V there); k shortened where drafting stopped early.
  void propose_with_mtp(SchedulerOutput& out, std::span<const size_t> chunk_of,
                        std::span<const uint8_t> by_head, std::vector<int64_t>& k);
  // kMtp: each chunk's sequence keeps the hidden state of its last computed position (the step's
  // row kept_rows - 1 of the chunk), which the head pairs with its next token.
  void keep_mtp_hidden(const ScheduledChunk& c, int32_t kept_rows);
  void propose_with_model(SchedulerOutput& out, std::span<const size_t> chunk_of,
                          std::span<const uint8_t> model, std::vector<int64_t>& k);
  // The cost model's figures of the step `out` (needs cost_), and its time on the roof
  // (model::roof_time), or 1 without a cost model.
  model::StepCost step_cost(const SchedulerOutput& out) const;
  double model_step_time(const SchedulerOutput& out) const;
  // Samples seq's token from one logits row (under its grammar, with logprobs when asked).
  // kError in ev.finish when the grammar allows nothing.
  int32_t sample_row(Sequence& seq, std::span<const float> logits, RequestOutput& ev);
  // A decode with a draft: samples row by row while the sampler picks the drafted tokens,
  // gives back the rejected drafts' slots, streams the tokens. Returns the rows it read.
  size_t verify_draft(const ScheduledChunk& c, std::span<const float> logits);

  EngineOptions opts_;
  MemoryBudget budget_;
  std::unique_ptr<Runner> runner_;
  const tokenizer::Tokenizer* tokenizer_;
  std::optional<model::ModelCost> cost_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Inbox> inbox_;
  model::Batch batch_;
  EngineStats stats_;        // engine thread's copy; published under the inbox mutex
  std::mutex token_index_mu_;
  std::shared_ptr<const grammar::TokenIndex> token_index_;
  std::shared_ptr<grammar::GrammarCache> grammar_cache_;  // under token_index_mu_
  std::vector<uint8_t> mask_;  // engine thread: allowed tokens of the sequence being sampled
  RecurrentSlots states_;  // hybrid models: live slots, the prefix cache's states
  bool mixed_step_ = false;  // this step runs a prompt chunk beside its decodes
  std::optional<spec::StepTimes> step_times_;  // speculative decoding: measured step times
  spec::AcceptanceRate acceptance_;  // over all sequences: a new sequence's first estimate
  std::unique_ptr<Drafter> drafter_;  // kDraft
  // A draft step's time over a decode-only target step's: the weights' ratio until both are
  // timed (decayed averages, seconds).
  double draft_ratio_model_ = 0.1;
  double draft_step_seconds_ = 0, target_step_seconds_ = 0;
  // Those averages: the first time as it is, then 0.9 of the average and 0.1 of the new one.
  static void add_to_average(double& avg, double seconds) { avg = avg > 0 ? 0.9 * avg + 0.1 * seconds : seconds; }
};

}  // namespace ridge::engine
