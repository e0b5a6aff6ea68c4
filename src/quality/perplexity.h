// Perplexity of a model over a token stream, by llama.cpp's method (llama-perplexity), so the
// two numbers compare: the tokens are cut into chunks of n_ctx; each chunk is evaluated from an
// empty context with its first token replaced by BOS (where the vocabulary adds one), and only its
// second half is scored (positions n_ctx/2 .. n_ctx-2 predict the next token), so every scored
// token sees at least n_ctx/2 tokens of context.
//   PPL = exp(mean NLL), NLL = -log softmax(logits)[next token];
//   uncertainty = PPL * sqrt((mean NLL^2 - mean NLL^2) / (count - 1)).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace ridge::quality {

struct PerplexityOptions {
  int64_t n_ctx = 512;      // tokens per chunk
  int64_t n_chunks = -1;    // chunks to score at most (-1: all that fit)
  int64_t n_batch = 512;    // tokens per forward step
  kv::KvType kv_type = kv::KvType::kF16;
  int32_t bos = -1;         // the first token of every chunk becomes this (-1: left as it is)
};

struct PerplexityResult {
  double ppl = 0;
  double ppl_error = 0;       // one standard error, as llama.cpp prints it
  int64_t n_chunks = 0;
  int64_t n_scored = 0;       // tokens scored
  std::vector<double> running;  // PPL after each chunk
};

// What every score here normalises a row of logits with, as llama.cpp computes it: the maximum
// (in float; its first index) and the sum of exp(logit - max) in double.
struct RowNorm {
  float max = 0;
  int64_t argmax = 0;
  double sum_exp = 0;
};
RowNorm row_norm(std::span<const float> logits);

// The negative log-likelihood of `token` under one row of logits.
double token_nll(std::span<const float> logits, int32_t token);

// -c (4..2^20), -b (>= 1) and --chunks (-1 or positive) as a user gave them; usage errors name
// the flag.
Status check_options(const PerplexityOptions& o);
// Chunks scored over n_tokens: all that fit, at most o.n_chunks.
int64_t chunk_count(int64_t n_tokens, const PerplexityOptions& o);
// The text as llama-perplexity tokenizes it (special tokens added, none parsed); a usage error
// when it is shorter than two chunks of o.n_ctx.
Result<std::vector<int32_t>> text_tokens(const tokenizer::Tokenizer& tok, std::string_view text,
                                         const PerplexityOptions& o);
// PerplexityOptions::bos as llama.cpp chooses it: the vocabulary's BOS where it adds one, else -1.
int32_t chunk_bos(const tokenizer::Tokenizer& tok);

// Each scored position: its logits and the text's next token (--save-logits, --kl-divergence).
using ScoredRow = std::function<Status(std::span<const float> logits, int32_t next)>;

// Needs at least 2 * n_ctx tokens (llama.cpp's rule); on_chunk(i, running PPL) after each chunk.
Result<PerplexityResult> perplexity(const model::Model& m, std::span<const int32_t> tokens,
                                    const PerplexityOptions& o, ThreadPool& pool,
                                    const std::function<void(int64_t, double)>& on_chunk = {},
                                    const ScoredRow& on_row = {});

}  // namespace ridge::quality
