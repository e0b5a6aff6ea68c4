// What `ridge run` and `ridge chat` share: model/sampling options, loading, and the
// sample -> detokenize -> stop-check -> decode loop of one sequence.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "cli/common.h"
#include "cli/draft_model.h"
#include "base/thread_pool.h"
#include "model/cost.h"
#include "model/model.h"
#include "engine/session.h"
#include "sampling/params.h"
#include "sampling/sampler.h"
#include "spec/ngram.h"
#include "tokenizer/tokenizer.h"

namespace ridge::cli {

struct GenerationOptions {
  std::string model_path;
  std::optional<int> n_threads; // default: hardware concurrency
  int64_t n_ctx = 0;            // 0: min(training context, 4096)
  int64_t n_batch = 256;        // prompt tokens per forward step
  int64_t n_predict = 256;      // most tokens to generate (per turn in chat)
  std::string isa;              // "", ref, avx2, avx512
  std::string device = "cpu";   // --device: the backend
  std::string kv_type = "f16";  // f16, bf16, q8_0 or f32
  sampling::SamplingParams sampling;
  std::optional<uint64_t> seed;
  gguf::Backing backing = gguf::Backing::kHugePages;
  std::string spec;             // speculative decoding: "" (off), "ngram" (prompt lookup), "draft", "mtp"
  std::string draft_path;       // --draft FILE.gguf: the draft model (implies --spec draft)
  int spec_max = 8;             // draft tokens per verification step at most
  int spec_ngram = 3;           // longest suffix the n-gram proposer looks up
  std::string spec_rule = "auto";  // how drafts are verified: auto, match, rejection
  bool swa_full = false;        // sliding-window layers keep every position (engine/session.h)
};

// Adds -m, -t, -c, -b, -n, --isa, --device, --kv-type, --mmap, --spec* and the sampling flags to `app`.
void add_generation_options(CLI::App& app, GenerationOptions& o);

// Everything a generating command needs, loaded and validated.
struct Loaded {
  std::optional<spec::NgramOptions> ngram;  // --spec ngram
  std::unique_ptr<DraftModel> draft;        // --spec draft
  bool mtp = false;                         // --spec mtp: the model's MTP head (Session::draft_mtp)
  int64_t spec_max = 0;                     // draft tokens per step at most (0: no speculation)
  bool spec_rejection = false;              // sampled drafts, the rejection rule (else match)
  bool spec_cost_rule = true;               // false: spec_max drafts every step (tests)
  kv::KvType kv_type = kv::KvType::kF16;  // the session's KV cache type (and the cost model's)
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::shared_ptr<ThreadPool> pool;  // the session's, shared with a draft model's
  std::unique_ptr<engine::Session> session;
  double load_seconds = 0;
};

// Validates the options (usage errors: never clamped), then loads model, tokenizer, KV cache.
Result<Loaded> load_for_generation(GenerationOptions& o);

struct GenerationStats {
  int64_t n_generated = 0;    // tokens sampled
  int64_t n_decode_steps = 0; // forward steps (one token, or one token and a draft to verify)
  int64_t n_evaluated = 0;    // generated tokens now in the session's cache (all but the last)
  double decode_seconds = 0;  // sampling + decode steps
  bool stopped_by_eog = false;
  bool stopped_by_string = false;
  bool context_full = false;
  spec::SpecStats spec;       // with --spec: the verification steps and their drafts
};

// Samples from `logits` (of the session's last position), then alternates decode steps and
// sampling until end of generation, a stop string, `n_max` tokens or a full context. Text goes
// to `emit` as it becomes final (valid UTF-8, stop strings withheld). `generated` receives the
// sampled tokens (without a final end-of-generation token). With speculation, each step also
// evaluates a draft after the newest token. The match rule takes the drafts the sampler picks
// itself, in order: every token is sampled once, from the logits plain decoding computes for it
// (the forward pass gives a row the same bits in a chunk as alone), so the output is plain
// decoding's, seed for seed. The rejection rule (l.spec_rejection) has the draft model sample
// its drafts and keeps each with probability min(1, p/q): the output follows the model's
// distribution, not its seed's stream. The cache ends as plain decoding leaves it (rejected
// drafts cut).
Result<GenerationStats> generate(Loaded& l, sampling::Sampler& sampler,
                                 std::span<const float> logits, std::vector<int32_t>& history,
                                 int64_t n_max, const std::vector<std::string>& stops,
                                 const std::function<void(std::string_view)>& emit,
                                 std::vector<int32_t>* generated = nullptr);

}  // namespace ridge::cli
