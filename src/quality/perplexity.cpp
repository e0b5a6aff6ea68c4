#include "quality/perplexity.h"

#include <algorithm>
#include <cmath>

#include "engine/session.h"

namespace ridge::quality {

namespace {

Status check_length(int64_t n_tokens, int64_t n_ctx) {
  if (n_tokens >= 2 * n_ctx) return ok_status();
  return usage_error("the text has {} tokens; a context of {} needs at least {}", n_tokens, n_ctx, 2 * n_ctx);
}

}  // namespace

RowNorm row_norm(std::span<const float> logits) {
  RowNorm r;
  r.max = logits[0];
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > r.max) {
      r.max = logits[i];
      r.argmax = static_cast<int64_t>(i);
    }
  }
  for (float v : logits) r.sum_exp += std::exp(v - r.max);
  return r;
}

double token_nll(std::span<const float> logits, int32_t token) {
  const RowNorm n = row_norm(logits);
  return -(static_cast<double>(logits[static_cast<size_t>(token)] - n.max) - std::log(n.sum_exp));
}

Status check_options(const PerplexityOptions& o) {
  if (o.n_ctx < 4 || o.n_ctx > (1 << 20)) return usage_error("-c {} is outside 4..{}", o.n_ctx, 1 << 20);
  if (o.n_batch < 1) return usage_error("-b must be at least 1, got {}", o.n_batch);
  if (o.n_chunks < -1 || o.n_chunks == 0) return usage_error("--chunks must be -1 or positive, got {}", o.n_chunks);
  return ok_status();
}

int64_t chunk_count(int64_t n_tokens, const PerplexityOptions& o) {
  const int64_t n = n_tokens / o.n_ctx;
  return o.n_chunks >= 0 ? std::min(n, o.n_chunks) : n;
}

Result<std::vector<int32_t>> text_tokens(const tokenizer::Tokenizer& tok, std::string_view text,
                                         const PerplexityOptions& o) {
  std::vector<int32_t> tokens = tok.encode(text, /*add_special=*/true, /*parse_special=*/false);
  RIDGE_RETURN_IF_ERROR(check_length(static_cast<int64_t>(tokens.size()), o.n_ctx));
  return tokens;
}

int32_t chunk_bos(const tokenizer::Tokenizer& tok) {
  return tok.add_bos() && tok.bos() >= 0 ? tok.bos() : -1;
}

Result<PerplexityResult> perplexity(const model::Model& m, std::span<const int32_t> tokens,
                                    const PerplexityOptions& o, ThreadPool& pool,
                                    const std::function<void(int64_t, double)>& on_chunk,
                                    const ScoredRow& on_row) {
  RIDGE_RETURN_IF_ERROR(check_options(o).with_prefix("perplexity"));
  const auto n_tokens = static_cast<int64_t>(tokens.size());
  RIDGE_RETURN_IF_ERROR(check_length(n_tokens, o.n_ctx).with_prefix("perplexity"));
  const int64_t n_vocab = m.config().n_vocab;
  for (int32_t t : tokens) {
    if (t < 0 || t >= n_vocab) return error("perplexity: token {} is outside the vocabulary of {}", t, n_vocab);
  }
  const int64_t first = o.n_ctx / 2;
  engine::SessionOptions so;
  so.n_ctx = o.n_ctx;
  so.kv_type = o.kv_type;
  so.max_batch = o.n_batch;
  so.max_outputs = std::min(o.n_batch, o.n_ctx - first);
  so.n_threads = static_cast<int>(pool.size());
  RIDGE_ASSIGN_OR_RETURN(engine::Session s, engine::Session::create(m, so, engine::lend_pool(pool)));
  const int64_t n_chunks = chunk_count(n_tokens, o);
  PerplexityResult r;
  double nll = 0, nll2 = 0;
  std::vector<int32_t> chunk(static_cast<size_t>(o.n_ctx));
  for (int64_t i = 0; i < n_chunks; ++i) {
    std::copy_n(tokens.begin() + i * o.n_ctx, o.n_ctx, chunk.begin());
    if (o.bos >= 0) chunk[0] = o.bos;
    s.reset();
    // The first half only builds context; the second half's logits are scored.
    RIDGE_RETURN_IF_ERROR(s.eval(std::span(chunk).first(static_cast<size_t>(first))).status());
    RIDGE_ASSIGN_OR_RETURN(std::span<const float> logits,
                           s.eval(std::span(chunk).subspan(static_cast<size_t>(first)), /*all_logits=*/true));
    for (int64_t j = first; j < o.n_ctx - 1; ++j) {
      // Scored against the text's token, not the BOS that replaced it.
      const auto row = logits.subspan(static_cast<size_t>((j - first) * n_vocab), static_cast<size_t>(n_vocab));
      const int32_t next = tokens[static_cast<size_t>(i * o.n_ctx + j + 1)];
      const double v = token_nll(row, next);
      if (on_row) RIDGE_RETURN_IF_ERROR(on_row(row, next));
      nll += v;
      nll2 += v * v;
      r.n_scored += 1;
    }
    r.running.push_back(std::exp(nll / static_cast<double>(r.n_scored)));
    if (on_chunk) on_chunk(i, r.running.back());
  }
  r.n_chunks = n_chunks;
  const double mean = nll / static_cast<double>(r.n_scored);
  const double var = nll2 / static_cast<double>(r.n_scored) - mean * mean;
  r.ppl = std::exp(mean);
  r.ppl_error = var > 0 && r.n_scored > 1 ? std::sqrt(var / static_cast<double>(r.n_scored - 1)) * r.ppl : 0.0;
  return r;
}

}  // namespace ridge::quality
