// What a client gives the engine (Request) and what it gets back (RequestOutput events), plus
// per-request statistics. Plain data: no engine state, safe to copy between threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "sampling/params.h"
#include "sampling/sampler.h"

namespace ridge::engine {

using RequestId = int64_t;

enum class FinishReason {
  kNone,    // still running
  kStop,    // end-of-generation token, stop token id or stop string
  kLength,  // max_tokens reached, or the sequence reached max-model-len
  kAbort,   // abort(id), or the engine stopped without draining
  kError,   // the step failed (message in RequestOutput::error)
};
std::string_view finish_reason_name(FinishReason r);  // "stop", "length", "abort", "error", ""

// Times are now_seconds() (base/timer.h, monotonic); 0 = not reached yet.
struct RequestStats {
  double arrival_time = 0;      // add_request()
  double first_scheduled_time = 0;
  double first_token_time = 0;  // first generated token sampled
  double last_token_time = 0;
  double finish_time = 0;
  int32_t n_prompt_tokens = 0;
  int32_t n_cached_prompt_tokens = 0;  // prompt tokens whose KV came from the prefix cache
                                       // at the first admission
  int32_t n_completion_tokens = 0;
  int32_t n_preemptions = 0;           // times this request lost its KV and was recomputed
  int32_t n_draft_tokens = 0;          // speculative decoding: tokens proposed and verified
  int32_t n_accepted_tokens = 0;       // of them, the ones the sampler picked (output unchanged)

  double queue_time() const { return first_scheduled_time > 0 ? first_scheduled_time - arrival_time : 0; }
  double ttft() const { return first_token_time > 0 ? first_token_time - arrival_time : 0; }
  double latency() const { return finish_time > 0 ? finish_time - arrival_time : 0; }
  // Generated tokens after the first, per second of decoding (0 with fewer than 2 tokens).
  double decode_tok_per_s() const {
    const double t = last_token_time - first_token_time;
    return n_completion_tokens > 1 && t > 0 ? (n_completion_tokens - 1) / t : 0;
  }
};

// One streamed event of one request: the tokens generated since the previous event (usually
// one), their text, and at the end a finish reason. Exactly one event per request has
// finished() true, and it is the last one.
struct RequestOutput {
  RequestId id = 0;
  std::vector<int32_t> tokens;                    // new token ids
  std::vector<sampling::SampleResult> logprobs;   // one per new token when Request::n_logprobs >= 0
  std::string text;      // new text (UTF-8 complete, stop strings withheld); empty without tokenizer
  FinishReason finish = FinishReason::kNone;
  std::string error;     // why, when finish == kError
  RequestStats stats;    // up to date as of this event
  std::vector<float> embedding;  // embedding engines: the pooled, L2-normalised vector (last event)
  bool finished() const { return finish != FinishReason::kNone; }
};

// Called on the engine thread for every event, in order per request. It must be quick and must
// not call back into the engine's step()/run_loop() (add_request/abort are fine).
using OutputCallback = std::function<void(const RequestOutput&)>;

struct Request {
  // Either tokens, or text (encoded with the engine's tokenizer; add_special / parse_special).
  std::vector<int32_t> prompt_tokens;
  std::string prompt_text;
  bool add_special = true;
  bool parse_special = true;
  sampling::SamplingParams params;  // max_tokens -1: up to max-model-len
  // Lower is served first (as vLLM); equal priorities are first-come-first-served.
  int32_t priority = 0;
  // >= 0: report the sampled token's log-probability and this many top alternatives.
  int32_t n_logprobs = -1;
  bool ignore_eos = false;                 // keep going past end-of-generation tokens
  // Structured output: every generated token keeps the text a prefix of this grammar's language,
  // and end-of-generation is allowed only once it is a complete sentence. Needs the engine's
  // tokenizer; not with ignore_eos.
  std::shared_ptr<const grammar::Grammar> grammar;
  std::vector<int32_t> stop_token_ids;     // extra tokens that end generation (kept in output)
  // The output the client expects (OpenAI's `prediction`): drafts are taken from it and
  // verified as speculative decoding's (the output is the same, only faster where it is right).
  // Used with any EngineOptions::spec; ignored where the engine cannot speculate (embeddings, and
  // models with recurrent state without EngineOptions::spec: no spare state slots).
  std::vector<int32_t> prediction;
  OutputCallback on_output;                // may be empty (poll stats / results instead)
};

}  // namespace ridge::engine
