#include "spec/ngram.h"

#include <algorithm>

namespace ridge::spec {

std::vector<int32_t> ngram_draft(std::span<const int32_t> history, const NgramOptions& o) {
  const auto len = static_cast<int64_t>(history.size());
  for (int64_t n = std::min<int64_t>(o.max_ngram, len - 1); n >= std::max(o.min_ngram, 1); --n) {
    const auto pattern = history.subspan(static_cast<size_t>(len - n));
    // The most recent earlier start p with history[p, p + n) == pattern and a token after it.
    for (int64_t p = len - n - 1; p >= 0; --p) {
      if (!std::equal(pattern.begin(), pattern.end(), history.begin() + p)) continue;
      // The text repeats itself from p on, so it goes on repeating past its end: the draft
      // copies the continuation, and its own tokens once the copy reaches the end (a loop of
      // period len - n - p proposes the whole loop, not just what is left of its last turn).
      const int64_t from = p + n;
      std::vector<int32_t> out;
      out.reserve(static_cast<size_t>(o.max_draft));
      for (int64_t i = 0; i < o.max_draft; ++i) {
        const int64_t at = from + i;
        out.push_back(at < len ? history[static_cast<size_t>(at)] : out[static_cast<size_t>(at - len)]);
      }
      return out;
    }
  }
  return {};
}

PredictionDraft prediction_draft(std::span<const int32_t> history, std::span<const int32_t> prediction,
                                 const NgramOptions& o, int64_t hint) {
  const auto len = static_cast<int64_t>(history.size());
  const auto plen = static_cast<int64_t>(prediction.size());
  for (int64_t n = std::min<int64_t>(o.max_ngram, len); n >= std::max(o.min_ngram, 1); --n) {
    const auto pattern = history.subspan(static_cast<size_t>(len - n));
    int64_t best = -1;  // the start of the chosen occurrence
    for (int64_t p = 0; p + n < plen; ++p) {
      if (!std::equal(pattern.begin(), pattern.end(), prediction.begin() + p)) continue;
      best = p;
      if (p + n >= hint) break;  // the first at or after the hint
    }
    if (best < 0) continue;
    const int64_t from = best + n, to = std::min(plen, from + o.max_draft);
    return {{prediction.begin() + from, prediction.begin() + to}, from};
  }
  return {};
}

}  // namespace ridge::spec
