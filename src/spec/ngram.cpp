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
      const int64_t from = p + n, to = std::min(len, from + o.max_draft);
      return {history.begin() + from, history.begin() + to};
    }
  }
  return {};
}

}  // namespace ridge::spec
