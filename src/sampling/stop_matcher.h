// StopMatcher: finds stop strings in streamed text without emitting any part of them.
//
// Text arrives in pieces (one per token, from the incremental detokenizer). A stop string may
// straddle pieces, so the matcher holds back the longest tail of the text that could still be
// the start of a stop string and releases it once it cannot. The stop string and anything after
// it are never emitted. Holding back whole bytes of a stop-string prefix never splits a UTF-8
// character when the text and the stop strings are valid UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ridge::sampling {

class StopMatcher {
 public:
  // stops: non-empty strings (empty ones are ignored).
  explicit StopMatcher(std::vector<std::string> stops);

  struct Output {
    std::string text;        // safe to emit now (may be empty)
    bool stopped = false;    // a stop string matched; generation should end
    int32_t stop_index = -1; // which one (index into stops), when stopped
  };

  // Feeds the next piece. Once stopped, further pieces are ignored (empty text, stopped true).
  Output push(std::string_view piece);
  // Generation ended for another reason (EOS, max_tokens): releases the held-back text.
  std::string flush();

  bool stopped() const { return stop_index_ >= 0; }
  // Bytes currently held back.
  size_t n_held() const { return held_.size(); }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  int32_t stop_index_ = -1;
};

}  // namespace ridge::sampling
