// Marker scanning and JSON helpers of the output parser.
#include <algorithm>

#include "chat/output_internal.h"

namespace ridge::chat {

std::string_view ltrim(std::string_view s) {
  size_t b = 0;
  while (b < s.size() && is_space(s[b])) ++b;
  return s.substr(b);
}

size_t rtrim_len(std::string_view s) {
  size_t e = s.size();
  while (e > 0 && is_space(s[e - 1])) --e;
  return e;
}

std::string_view trim(std::string_view s) {
  s = ltrim(s);
  return s.substr(0, rtrim_len(s));
}

ReasoningTags reasoning_tags(const FormatInfo& f) {
  if (f.tools == OutputFormat::kGemma4) return {"<|channel>thought", "<channel|>"};
  return {"<think>", "</think>"};
}

MarkerHit find_marker(std::string_view buf, std::span<const std::string_view> markers) {
  MarkerHit best;
  for (size_t i = 0; i < markers.size(); ++i) {
    const size_t p = buf.find(markers[i]);
    if (p == std::string_view::npos) continue;
    if (p < best.pos || (p == best.pos && markers[i].size() > markers[best.index].size())) {
      best.pos = p;
      best.index = i;
    }
  }
  return best;
}

size_t partial_marker_suffix(std::string_view buf, std::span<const std::string_view> markers) {
  size_t best = 0;
  for (std::string_view m : markers) {
    const size_t max_k = std::min(buf.size(), m.size() - 1);
    for (size_t k = max_k; k > best; --k) {
      if (buf.substr(buf.size() - k) == m.substr(0, k)) {
        best = k;
        break;
      }
    }
  }
  return best;
}

bool JsonExtent::feed(char c) {
  if (done_) return false;
  if (in_string_) {
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      in_string_ = false;
    }
    return false;
  }
  switch (c) {
    case '"':
      in_string_ = depth_ > 0;
      break;
    case '{':
    case '[':
      ++depth_;
      break;
    case '}':
    case ']':
      if (depth_ > 0 && --depth_ == 0) {
        done_ = true;
        return true;
      }
      break;
    default:
      break;
  }
  return false;
}

namespace {

// Nesting depth of JSON text (brackets outside strings), to refuse what nlohmann's recursive
// serialiser could not print without exhausting the stack.
bool depth_at_most(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  bool escape = false;
  for (char c : text) {
    if (in_string) {
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

constexpr int kMaxJsonDepth = 256;

}  // namespace

nlohmann::json parse_json(std::string_view text) {
  if (!depth_at_most(text, kMaxJsonDepth)) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  return nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ridge::chat
