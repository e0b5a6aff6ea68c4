// Speculative decoding's proposers and bookkeeping (docs/speculative.md). A proposer guesses the
// next few tokens cheaply; the target model checks all of them in one forward pass, which costs
// about one decode step while decode is bandwidth-bound.
//
// Prompt lookup (n-gram) drafting: the tokens that followed the most recent earlier occurrence of
// the text's last n tokens (n from max_ngram down to min_ngram), max_draft of them: where the copy
// reaches the end of the text it goes on with its own tokens (the repeat repeats). Code edits,
// summaries and RAG answers repeat their context, and so does a model stuck in a loop.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ridge::spec {

struct NgramOptions {
  int max_ngram = 3;  // longest suffix looked up
  int min_ngram = 1;  // shortest
  int max_draft = 8;  // tokens proposed at most
};

// The draft for `history` (prompt and generated tokens, the last one included); empty when no
// suffix of min_ngram..max_ngram tokens occurred earlier with a continuation.
std::vector<int32_t> ngram_draft(std::span<const int32_t> history, const NgramOptions& o);

// Drafting from a predicted output (OpenAI's `prediction`: the text the client expects, e.g.
// the file an edit rewrites): the tokens of `prediction` after an occurrence of the text's last
// n tokens (n from max_ngram down to min_ngram), max_draft of them at most. Of several
// occurrences, the first at or after `hint` (where the previous draft from the prediction
// stopped being right; 0 at first), else the last before it. `from` is where the draft starts
// in the prediction; empty when nothing matches.
struct PredictionDraft {
  std::vector<int32_t> tokens;
  int64_t from = 0;
};
PredictionDraft prediction_draft(std::span<const int32_t> history, std::span<const int32_t> prediction,
                                 const NgramOptions& o, int64_t hint);

// What speculation did over a run: verification steps, tokens proposed, tokens accepted.
struct SpecStats {
  int64_t n_steps = 0;     // forward steps that verified a draft
  int64_t n_drafted = 0;   // draft tokens proposed
  int64_t n_accepted = 0;  // of them, accepted
  int64_t n_tokens = 0;    // tokens the steps (plain ones included) put in the cache
  double predicted_units = 0;  // the cost model's time of those steps, in plain decode steps
  double acceptance() const { return n_drafted > 0 ? static_cast<double>(n_accepted) / static_cast<double>(n_drafted) : 0.0; }
  // Tokens each verification step emitted: the accepted drafts and the target's own token.
  double tokens_per_step() const {
    return n_steps > 0 ? static_cast<double>(n_accepted + n_steps) / static_cast<double>(n_steps) : 0.0;
  }
  // The speed-up over plain decoding the cost model predicts for the steps taken.
  double predicted_speedup() const {
    return predicted_units > 0 ? static_cast<double>(n_tokens) / predicted_units : 0.0;
  }
};

}  // namespace ridge::spec
