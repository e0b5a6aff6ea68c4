#include "sampling/select.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace ridge::sampling::detail {

namespace {

// Histogram of scaled logits x <= 0: bucket floor(-x * 8), so 1/8 nat per bucket, 128 nats.
constexpr int kBucketsPerNat = 8;
constexpr int kBuckets = 1024;
// Below this many candidates a full sort is cheaper than the histogram passes.
constexpr size_t kSortDirectly = 512;

int bucket_of(float x) {
  const float b = -x * static_cast<float>(kBucketsPerNat);
  return b >= static_cast<float>(kBuckets - 1) ? kBuckets - 1 : static_cast<int>(b);
}

// Walks `cands` (in order) from cumulative weight `cum`; keeps up to and including the token
// where the sum reaches `mass`. Returns how many to keep.
size_t walk(std::span<const Candidate> cands, double cum, double mass) {
  for (size_t i = 0; i < cands.size(); ++i) {
    cum += cands[i].weight;
    if (cum >= mass) return i + 1;
  }
  return cands.size();
}

}  // namespace

void select_top_k(std::span<const float> logits, int32_t k, std::vector<Candidate>& out) {
  const size_t first = out.size();
  const auto n_keep = static_cast<size_t>(k);
  // `better` as the heap order puts the worst kept candidate on top.
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = logits[i];
    if (!(l > -INFINITY)) continue;  // banned (or NaN)
    const size_t n_heap = out.size() - first;
    if (n_heap < n_keep) {
      out.push_back({static_cast<int32_t>(i), l, 0.0f});
      std::push_heap(out.begin() + static_cast<ptrdiff_t>(first), out.end(), better);
    } else if (l > out[first].logit) {  // ids grow, so an equal logit never wins
      std::pop_heap(out.begin() + static_cast<ptrdiff_t>(first), out.end(), better);
      out.back() = {static_cast<int32_t>(i), l, 0.0f};
      std::push_heap(out.begin() + static_cast<ptrdiff_t>(first), out.end(), better);
    }
  }
  std::sort_heap(out.begin() + static_cast<ptrdiff_t>(first), out.end(), better);
}

void keep_top_p(std::vector<Candidate>& cands, double mass, bool sorted,
                std::vector<Candidate>& scratch) {
  if (sorted || cands.size() <= kSortDirectly) {
    if (!sorted) std::sort(cands.begin(), cands.end(), better);
    cands.resize(walk(cands, 0.0, mass));
    return;
  }
  std::array<double, kBuckets> bucket_mass{};
  for (const Candidate& c : cands) bucket_mass[static_cast<size_t>(bucket_of(c.logit))] += c.weight;
  // The bucket where the cumulative mass (in descending order) reaches `mass`.
  double cum = 0.0;
  int cut = 0;
  for (; cut < kBuckets; ++cut) {
    if (cum + bucket_mass[static_cast<size_t>(cut)] >= mass) break;
    cum += bucket_mass[static_cast<size_t>(cut)];
  }
  if (cut == kBuckets) return;  // rounding: the whole set is needed
  // Buckets above the cut are kept whole; the cut bucket is sorted and walked.
  scratch.clear();
  size_t n_kept = 0;
  for (const Candidate& c : cands) {
    const int b = bucket_of(c.logit);
    if (b < cut) {
      cands[n_kept++] = c;
    } else if (b == cut) {
      scratch.push_back(c);
    }
  }
  std::sort(scratch.begin(), scratch.end(), better);
  // If rounding keeps the walk short of `mass`, the whole bucket is kept.
  const size_t n_from_cut = walk(scratch, cum, mass);
  cands.resize(n_kept);
  cands.insert(cands.end(), scratch.begin(), scratch.begin() + static_cast<ptrdiff_t>(n_from_cut));
}

}  // namespace ridge::sampling::detail
