// Gemma 4 tool calls: <|tool_call>call:NAME{key:VALUE,...}<tool_call|>, values in the template's
// own notation (format_argument): strings between <|"|> quotes, {k:v} objects with bare keys,
// [a,b] lists, and bare true / false / numbers (Python's None / True / False accepted). They are
// converted to a JSON object; the block ends at the first <tool_call|> outside a string.
#include <algorithm>

#include "chat/output_internal.h"

namespace ridge::chat {
namespace {

constexpr std::string_view kOpen = "<|tool_call>";
constexpr std::string_view kClose = "<tool_call|>";
constexpr std::string_view kQuote = "<|\"|>";
constexpr int kMaxDepth = 64;

class ValueParser {
 public:
  explicit ValueParser(std::string_view s) : s_(s) {}

  bool value(nlohmann::json& out, int depth) {
    skip_ws();
    if (depth > kMaxDepth || pos_ >= s_.size()) return false;
    if (s_.substr(pos_).starts_with(kQuote)) {
      const size_t b = pos_ + kQuote.size();
      const size_t e = s_.find(kQuote, b);
      if (e == std::string_view::npos) return false;
      out = std::string(s_.substr(b, e - b));
      pos_ = e + kQuote.size();
      return true;
    }
    if (s_[pos_] == '{') return object(out, depth);
    if (s_[pos_] == '[') {
      ++pos_;
      out = nlohmann::json::array();
      skip_ws();
      if (eat(']')) return true;
      for (;;) {
        nlohmann::json v;
        if (!value(v, depth + 1)) return false;
        out.push_back(std::move(v));
        skip_ws();
        if (eat(']')) return true;
        if (!eat(',')) return false;
      }
    }
    const size_t b = pos_;
    while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != '}' && s_[pos_] != ']') ++pos_;
    const std::string_view tok = trim(s_.substr(b, pos_ - b));
    if (tok.empty()) return false;
    if (tok == "None" || tok == "null") {
      out = nullptr;
    } else if (tok == "True" || tok == "true") {
      out = true;
    } else if (tok == "False" || tok == "false") {
      out = false;
    } else {
      out = parse_json(tok);
      if (out.is_discarded()) out = std::string(tok);
    }
    return true;
  }

  // {key:value,...} with bare (or quoted) keys.
  bool object(nlohmann::json& out, int depth) {
    if (!eat('{')) return false;
    out = nlohmann::json::object();
    skip_ws();
    if (eat('}')) return true;
    for (;;) {
      skip_ws();
      std::string key;
      if (s_.substr(pos_).starts_with(kQuote)) {
        nlohmann::json k;
        if (!value(k, depth + 1)) return false;
        key = k.get<std::string>();
      } else {
        const size_t colon = s_.find(':', pos_);
        if (colon == std::string_view::npos) return false;
        key = std::string(trim(s_.substr(pos_, colon - pos_)));
        pos_ = colon;
      }
      skip_ws();
      if (key.empty() || !eat(':')) return false;
      nlohmann::json v;
      if (!value(v, depth + 1)) return false;
      out[key] = std::move(v);
      skip_ws();
      if (eat('}')) return true;
      if (!eat(',')) return false;
    }
  }

  bool at_end() {
    skip_ws();
    return pos_ == s_.size();
  }

 private:
  void skip_ws() {
    while (pos_ < s_.size() && is_space(s_[pos_])) ++pos_;
  }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

class Gemma4Block final : public ToolBlock {
 public:
  size_t find_end(std::string_view block) override {
    for (;;) {
      const size_t q = block.find(kQuote, pos_);
      if (!in_string_) {
        const size_t c = block.find(kClose, pos_);
        if (c != std::string_view::npos && (q == std::string_view::npos || c < q)) {
          return c + kClose.size();
        }
      }
      if (q == std::string_view::npos) {
        const size_t keep = std::max(kQuote.size(), kClose.size()) - 1;
        pos_ = std::max(pos_, block.size() - std::min(block.size(), keep));
        return std::string_view::npos;
      }
      in_string_ = !in_string_;
      pos_ = q + kQuote.size();
    }
  }

  bool parse(std::string_view block, bool complete, std::vector<RawCall>& out) override {
    if (!complete) return false;
    std::string_view body = block.substr(kOpen.size(), block.size() - kOpen.size() - kClose.size());
    body = trim(body);
    if (!body.starts_with("call:")) return false;
    body.remove_prefix(5);
    const size_t brace = body.find('{');
    if (brace == std::string_view::npos) return false;
    RawCall call;
    call.name = std::string(trim(body.substr(0, brace)));
    if (call.name.empty()) return false;
    ValueParser vp(body.substr(brace));
    nlohmann::json args;
    if (!vp.object(args, 0) || !vp.at_end()) return false;
    call.arguments = dump_json(args);
    out.push_back(std::move(call));
    return true;
  }

 private:
  size_t pos_ = kOpen.size();
  bool in_string_ = false;
};

}  // namespace

std::unique_ptr<ToolBlock> make_gemma4_block(size_t /*marker_index*/,
                                             const ParserOptions& /*o*/) {
  return std::make_unique<Gemma4Block>();
}

}  // namespace ridge::chat
