#include "sampling/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace ridge::sampling {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

StopMatcher::Output StopMatcher::push(std::string_view piece) {
  Output out;
  if (stopped()) {
    out.stopped = true;
    out.stop_index = stop_index_;
    return out;
  }
  held_.append(piece);
  // Earliest occurrence wins (it ends the text first); on a tie, the first listed stop string.
  size_t best_pos = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t pos = held_.find(stops_[i]);
    if (pos < best_pos) {
      best_pos = pos;
      stop_index_ = static_cast<int32_t>(i);
    }
  }
  if (best_pos != std::string::npos) {
    out.text = held_.substr(0, best_pos);
    out.stopped = true;
    out.stop_index = stop_index_;
    held_.clear();
    return out;
  }
  // No match: everything before the longest tail that is a proper prefix of a stop string is
  // safe. held_ never holds more than (longest stop - 1) bytes between calls.
  size_t keep = 0;
  for (const std::string& s : stops_) {
    const size_t max_len = std::min(s.size() - 1, held_.size());
    for (size_t len = max_len; len > keep; --len) {
      if (std::string_view(held_).substr(held_.size() - len) == std::string_view(s).substr(0, len)) {
        keep = len;
        break;
      }
    }
  }
  out.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  if (stopped()) return {};
  return std::exchange(held_, std::string());
}

}  // namespace ridge::sampling
