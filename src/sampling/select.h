// Selection helpers of the sampler: the k best logits of a large vocabulary without sorting it,
// and the top-p cut without sorting more than the tokens near the cut. Internal to sampling/.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ridge::sampling::detail {

struct Candidate {
  int32_t id;
  float logit;   // after select_top_k: the raw value; in the sampler: (logit - max) / temperature
  float weight;  // exp(logit) once the sampler has scaled it
};

// The strict total order every selection uses (higher logit first, then lower id), so each
// selection has exactly one answer whatever the standard library.
inline bool better(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Appends the min(k, n_finite) best finite entries of `logits` to `out`, best first. k >= 1.
// One pass with a k-element heap: O(n + k log k log(n/k)) for a random order.
void select_top_k(std::span<const float> logits, int32_t k, std::vector<Candidate>& out);

// Keeps the shortest prefix of `cands` in `better` order whose weights sum to >= mass (all of
// them if they never do). sorted: cands are already in that order. Unsorted input is cut with a
// histogram of the logits (which must be <= 0) so only the tokens of one histogram bucket are
// sorted. Result order: deterministic; the tokens of whole buckets stay in input order.
void keep_top_p(std::vector<Candidate>& cands, double mass, bool sorted,
                std::vector<Candidate>& scratch);

}  // namespace ridge::sampling::detail
