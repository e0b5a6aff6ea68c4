// Sampler: turns one row of logits into the next token of one sequence.
//
// Pipeline, in this order (the order of Hugging Face's warpers; llama.cpp applies temperature
// last instead, which changes what top-p/min-p see):
//   logit bias -> repetition / frequency / presence penalties over the last penalty_last_n
//   history tokens -> (temperature 0: argmax, lowest id on ties) -> divide by temperature ->
//   top-k -> softmax -> top-p -> min-p -> draw with the sequence's seeded Rng.
// Cost for a vocabulary of 150k: a few linear passes plus a selection of the head; the full
// vocabulary is only sorted when top_p / min_p cannot cut it earlier.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "sampling/params.h"
#include "sampling/rng.h"
#include "sampling/select.h"

namespace ridge::sampling {

struct TokenProb {
  int32_t token;
  float prob;
};

struct TokenLogprob {
  int32_t token;
  float logprob;
};

// A sampled token with OpenAI-style log-probabilities. Log-probabilities are those of the raw
// model distribution (log-softmax of the logits as given, before bias, penalties, temperature
// and truncation), as vLLM reports them by default.
struct SampleResult {
  int32_t token = -1;
  float logprob = 0.0f;           // of `token`
  std::vector<TokenLogprob> top;  // the n_top most likely (fewer if fewer are finite),
                                  // descending, ties lowest id first
};

class Sampler {
 public:
  // Checks params.validate(n_vocab) and builds the sampler; the error is a usage error.
  static Result<Sampler> create(const SamplingParams& params, int32_t n_vocab);
  // Contract: params.validate(n_vocab).ok() (checked; a failure aborts).
  Sampler(const SamplingParams& params, int32_t n_vocab);

  // Next token. logits: [n_vocab] of this sequence's last position; history: the sequence's
  // tokens so far (prompt + generated), used by the penalties (ids outside [0, n_vocab) are
  // ignored). allowed: empty, or [n_vocab] with 0 for every token a constraint (a grammar)
  // forbids; those are banned before bias and penalties. If every token is banned (all -inf),
  // returns the lowest token id.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history,
                 std::span<const uint8_t> allowed = {});

  // Same token (same Rng stream) as sample(), plus log-probabilities of at most n_top best
  // tokens (n_top <= 0: none) of the raw distribution.
  SampleResult sample_with_logprobs(std::span<const float> logits,
                                    std::span<const int32_t> history, int32_t n_top,
                                    std::span<const uint8_t> allowed = {});

  // The distribution the draw uses: kept tokens with their probabilities (summing to 1), in the
  // (deterministic) order the draw walks them. Greedy gives the argmax with probability 1. Does
  // not advance the Rng. For tests and tools.
  std::vector<TokenProb> distribution(std::span<const float> logits,
                                      std::span<const int32_t> history);

  // Speculative sampling with a draft's distribution (Leviathan et al. 2023, Chen et al. 2023):
  // the draft side draws its token from this sampler's distribution of the draft model's
  // logits and keeps that distribution (q) for the target's verification.
  int32_t sample_draft(std::span<const float> logits, std::span<const int32_t> history,
                       std::vector<TokenProb>& q);

  // The target side: given x drawn from q, keeps x with probability min(1, p(x) / q(x)), where p
  // is this sampler's distribution of `logits`, and otherwise draws from the residual
  // max(0, p - q), normalized (it never holds x). Whatever q is, the token returned is
  // distributed as p. Contract: x is in q with a positive probability (checked).
  int32_t verify_draft(std::span<const float> logits, std::span<const int32_t> history, int32_t x,
                       std::span<const TokenProb> q);

  void reseed(uint64_t seed) { rng_.reseed(seed); }
  const SamplingParams& params() const { return params_; }
  int32_t n_vocab() const { return n_vocab_; }

 private:
  // Bias + penalties into work_ ([n_vocab]).
  void process_logits(std::span<const float> logits, std::span<const int32_t> history,
                      std::span<const uint8_t> allowed = {});
  // Temperature + top-k + top-p + min-p on work_ into kept_ (weights = exp of the scaled logit
  // relative to the top one); returns the sum of the kept weights, 0 if every token is banned.
  double truncate();
  // process_logits, then truncate() unless greedy (0 then, as when every token is banned).
  double process_and_truncate(std::span<const float> logits, std::span<const int32_t> history);
  // The kept candidates as probabilities (weights over total), in draw order, into out.
  void kept_distribution(double total, std::vector<TokenProb>& out) const;
  int32_t draw(double total);
  int32_t pick(std::span<const float> logits, std::span<const int32_t> history,
               std::span<const uint8_t> allowed);

  SamplingParams params_;
  int32_t n_vocab_;
  Rng rng_;
  std::vector<float> work_;                 // [n_vocab] processed logits
  std::vector<detail::Candidate> kept_;     // candidates surviving truncation
  std::vector<detail::Candidate> scratch_;  // for the top-p cut
  std::vector<int32_t> window_;             // scratch: sorted penalty window
  std::vector<float> q_dense_;              // scratch of verify_draft: q by token id, else 0
};

// Log-probabilities of the raw logits: the chosen token's (token in [0, n_vocab), checked) and
// those of at most n_top best tokens (n_top <= 0: none). logits [n_vocab].
SampleResult logprobs_of(std::span<const float> logits, int32_t token, int32_t n_top);

}  // namespace ridge::sampling
