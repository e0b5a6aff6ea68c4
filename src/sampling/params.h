// Sampling parameters of one request, and their validation.
//
// Defaults follow llama.cpp's command line (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05,
// no repetition penalty, penalty window 64). A value that is out of range is rejected by
// validate(), never clamped: the caller (CLI, server) turns the Status into its error.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace ridge::sampling {

struct SamplingParams {
  // Divides the logits. 0 selects greedy decoding (argmax, lowest id on ties). Must be >= 0.
  float temperature = 0.8f;
  // Keep only the top_k most likely tokens; 0 disables. Must be >= 0.
  int32_t top_k = 40;
  // Keep the smallest set of most likely tokens whose probability mass reaches top_p.
  // Must be in (0, 1]; 1 disables.
  float top_p = 0.95f;
  // Drop tokens whose probability is below min_p * (probability of the most likely token).
  // Must be in [0, 1]; 0 disables.
  float min_p = 0.05f;
  // CTRL-style penalty on tokens seen in the last penalty_last_n tokens: a positive logit is
  // divided by it, a negative one multiplied. Must be > 0; 1 disables.
  float repetition_penalty = 1.0f;
  // OpenAI-style: logit -= count * frequency_penalty + (count > 0) * presence_penalty, counts
  // over the same window. Must be finite; 0 disables.
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  // Window of the penalties in tokens: 0 disables them, -1 means the whole history.
  int32_t penalty_last_n = 64;
  // Added to the logit of a token id before anything else. A bias may be -infinity (the token is
  // never chosen) but not NaN or +infinity; ids must be in [0, n_vocab).
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Seed of the per-sequence random generator: the same seed, parameters and logits give the
  // same tokens on every platform.
  uint64_t seed = 0;
  // Generation stops when the text contains one of these (non-empty) strings; the stop string
  // itself is not part of the output (see StopMatcher).
  std::vector<std::string> stop;
  // Most tokens to generate; -1 means no limit but the context size. Must be >= -1.
  int32_t max_tokens = -1;

  bool greedy() const { return temperature == 0.0f; }
  bool has_penalties() const {
    return penalty_last_n != 0 &&
           (repetition_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f);
  }

  // Ok, or a usage error naming the first invalid field, e.g.
  // "sampling: top_p = 1.5 is outside (0, 1]".
  Status validate(int32_t n_vocab) const;
};

// A seed from the operating system's entropy source, for requests that give none.
uint64_t random_seed();

}  // namespace ridge::sampling
