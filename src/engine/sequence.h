// One request inside the engine: its tokens (prompt + generated), how many of them have KV in
// the cache, its block table, and the per-request state the engine needs to sample and stream.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/request.h"
#include "kv/block_manager.h"
#include "grammar/matcher.h"
#include "sampling/sampler.h"
#include "sampling/stop_matcher.h"
#include "spec/draft_length.h"
#include "tokenizer/tokenizer.h"

namespace ridge::engine {

enum class SeqState { kWaiting, kRunning, kFinished };

struct Sequence {
  RequestId id = 0;
  int32_t priority = 0;
  uint64_t arrival_order = 0;   // FCFS order among equal priorities (kept across preemption)
  std::vector<int32_t> tokens;  // prompt + generated
  int32_t n_prompt = 0;
  int32_t n_computed = 0;       // leading tokens whose KV is in the cache
  int32_t max_tokens = 0;       // resolved limit on generated tokens
  kv::BlockTable table;
  int32_t state_slot = -1;      // recurrent-state slot (hybrid models), held while running
  // Hybrid models' prefix cache (engine/recurrent_slots.h): the cached prefix found at admission
  // before it was cut to where a state is cached, and the latest snapshot taken while generating.
  int32_t kv_prefix_tokens = 0;
  int32_t gen_snapshot_slot = -1;
  kv::BlockHash gen_snapshot_hash = 0;
  std::vector<int32_t> draft_state_slots;  // the state after each draft token of this step
  SeqState state = SeqState::kWaiting;
  bool admitted_once = false;
  RequestStats stats;

  // Sampling and streaming (engine side).
  std::optional<sampling::Sampler> sampler;
  std::optional<grammar::Matcher> matcher;  // structured output: the grammar state
  std::optional<tokenizer::IncrementalDetokenizer> detok;
  std::optional<sampling::StopMatcher> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  int32_t n_logprobs = -1;
  // Speculative decoding (EngineOptions::spec): the draft this step verifies after the newest
  // token, the acceptance measured so far (starting from the engine's at the first draft), and
  // the longest draft allowed next (doubles after a draft taken whole, falls back after a
  // rejection).
  std::vector<int32_t> draft;
  std::vector<int32_t> prediction;  // Request::prediction
  int64_t prediction_hint = 0;      // where in it the last right draft token from it was
  int64_t draft_from = -1;          // where in it this step's draft starts (-1: not from it)
  std::optional<spec::AcceptanceRate> acceptance;
  // The rejection rule (EngineOptions::spec_rejection): the draft side's sampler, on a stream of
  // its own, and the distribution each draft token was drawn from.
  std::optional<sampling::Sampler> draft_sampler;
  std::vector<std::vector<sampling::TokenProb>> draft_q;
  int32_t draft_cap = 1;
  // The MTP head (SpecMethod::kMtp): the final-norm hidden state at position mtp_h_pos (the last
  // one computed), which the head pairs with the token after it; another position: none kept
  // (after a prefix-cache hit), and the head takes zeros there.
  std::vector<float> mtp_h;
  int32_t mtp_h_pos = -1;
  std::vector<float> pooled;    // embedding engines: sum (mean), or the chosen row
  OutputCallback on_output;

  int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t n_generated() const { return n_tokens() - n_prompt; }
  // Tokens not yet run through the model (1 for a decoding sequence).
  int32_t n_uncomputed() const { return n_tokens() - n_computed; }
};

}  // namespace ridge::engine
