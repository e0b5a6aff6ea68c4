// Gemma 4 tool calls: <|tool_call>call:NAME{key:VALUE,...}<tool_call|>, values in the template's
// own notation (format_argument): strings between <|"|> quotes, {k:v} objects with bare keys,
// [a,b] lists, and bare true / false / numbers (Python's None / True / False accepted). They are
// converted to a JSON object; the block ends at the first <tool_call|> outside a string. The call
// is committed at the arguments' '{' and sent a top-level pair at a time.
#include <algorithm>
#include <vector>

#include "chat/output_internal.h"

namespace ridge::chat {
namespace {

constexpr std::string_view kOpen = "<|tool_call>";
constexpr std::string_view kClose = "<tool_call|>";
constexpr std::string_view kQuote = "<|\"|>";
constexpr std::string_view kCall = "call:";
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
      std::string key;
      nlohmann::json v;
      if (!pair(key, v, depth)) return false;
      out[key] = std::move(v);
      skip_ws();
      if (eat('}')) return true;
      if (!eat(',')) return false;
    }
  }

  // key:value of an object at `depth`.
  bool pair(std::string& key, nlohmann::json& v, int depth) {
    skip_ws();
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
    return value(v, depth + 1);
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

// The arguments {key:VALUE,...}, streamed a top-level pair at a time: the pair is converted and
// sent ({"key":value or ,"key":value) once the ',' or '}' after it is seen. A small automaton of
// the notation finds those ends (strings, nesting, bare keys up to their ':').
class ArgsScanner {
 public:
  // `body`: from the arguments' '{' on (it only grows), up to the block's end when known.
  void scan(std::string_view body, CallSink& sink) {
    while (pos_ < body.size() && st_ != St::kDone && st_ != St::kError) {
      const std::string_view rest = body.substr(pos_);
      if (in_string_) {
        const size_t q = rest.find(kQuote);
        if (q == std::string_view::npos) {
          pos_ = std::max(pos_, body.size() - std::min(body.size(), kQuote.size() - 1));
          return;
        }
        pos_ += q + kQuote.size();
        in_string_ = false;
        st_ = st_ == St::kKey ? St::kColon : St::kAfter;
        continue;
      }
      const char c = rest[0];
      const bool may_quote = st_ == St::kKey || st_ == St::kValue || st_ == St::kFirstValue;
      if (may_quote && c == '<' && kQuote.starts_with(rest) && rest.size() < kQuote.size()) return;
      if (may_quote && rest.starts_with(kQuote)) {
        in_string_ = true;
        pos_ += kQuote.size();
        continue;
      }
      ++pos_;
      step(c, body, sink);
    }
  }

  void close(CallSink& sink) {
    if (st_ == St::kDone) return;
    sink.args(sent_any_ ? "}" : "{}");
    st_ = St::kDone;
  }

 private:
  enum class St { kBrace, kKey, kBareKey, kColon, kValue, kFirstValue, kBare, kAfter, kDone,
                  kError };

  void step(char c, std::string_view body, CallSink& sink) {
    switch (st_) {
      case St::kBrace:
        stack_.push_back('{');
        st_ = St::kKey;
        pair_start_ = pos_;
        return;
      case St::kKey:
        if (is_space(c)) return;
        if (c == '}') {
          end_container(c, body, sink);
          return;
        }
        st_ = St::kBareKey;
        [[fallthrough]];
      case St::kBareKey:
        if (c == ':') st_ = St::kValue;
        return;
      case St::kColon:
        if (is_space(c)) return;
        st_ = c == ':' ? St::kValue : St::kError;
        return;
      case St::kFirstValue:
        if (c == ']') {
          end_container(c, body, sink);
          return;
        }
        [[fallthrough]];
      case St::kValue:
        if (is_space(c)) return;
        if (c == '{' || c == '[') {
          stack_.push_back(c);
          st_ = c == '{' ? St::kKey : St::kFirstValue;
          return;
        }
        st_ = St::kBare;
        [[fallthrough]];
      case St::kBare:
        if (c != ',' && c != '}' && c != ']') return;
        st_ = St::kAfter;
        [[fallthrough]];
      case St::kAfter:
        if (is_space(c)) return;
        if (c == ',') {
          if (stack_.size() == 1) send_pair(body, sink);
          st_ = stack_.back() == '{' ? St::kKey : St::kValue;
          if (stack_.size() == 1) pair_start_ = pos_;
        } else if (c == '}' || c == ']') {
          end_container(c, body, sink);
        } else {
          st_ = St::kError;
        }
        return;
      case St::kDone:
      case St::kError: return;
    }
  }

  void end_container(char c, std::string_view body, CallSink& sink) {
    if (stack_.size() > 1) {
      stack_.pop_back();
      st_ = St::kAfter;
      return;
    }
    if (c != '}') {
      st_ = St::kError;
      return;
    }
    if (sent_any_ || !trim(body.substr(pair_start_, pos_ - 1 - pair_start_)).empty()) {
      send_pair(body, sink);
    }
    if (st_ == St::kError) return;
    sink.args(sent_any_ ? "}" : "{}");
    st_ = St::kDone;
  }

  // The pair that ends before the character just read.
  void send_pair(std::string_view body, CallSink& sink) {
    ValueParser vp(body.substr(pair_start_, pos_ - 1 - pair_start_));
    std::string key;
    nlohmann::json v;
    if (!vp.pair(key, v, 0) || !vp.at_end()) {
      st_ = St::kError;
      return;
    }
    std::string frag(sent_any_ ? "," : "{");
    frag += dump_json(key);
    frag += ':';
    frag += dump_json(v);
    sink.args(frag);
    sent_any_ = true;
  }

  St st_ = St::kBrace;
  bool in_string_ = false;
  size_t pos_ = 0;
  size_t pair_start_ = 0;
  std::vector<char> stack_;
  bool sent_any_ = false;
};

// <|tool_call>call:NAME{...}<tool_call|>: committed at the arguments' '{'.
class Gemma4Block final : public ToolBlock {
 public:
  size_t find_end(std::string_view block, CallSink& sink) override {
    const size_t end = scan_end(block);
    const size_t limit = end == std::string_view::npos ? block.size() : end - kClose.size();
    stream(block.substr(0, limit), sink);
    return end;
  }

  bool finish(std::string_view /*block*/, bool /*complete*/, CallSink& sink) override {
    if (!committed_) return false;
    args_.close(sink);
    return true;
  }

 private:
  // The first <tool_call|> outside a <|"|> string.
  size_t scan_end(std::string_view block) {
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

  // "call:" NAME "{": the call is committed, then the arguments are scanned.
  void stream(std::string_view body, CallSink& sink) {
    if (failed_) return;
    if (!committed_) {
      const std::string_view rest = ltrim(body.substr(kOpen.size()));
      if (!rest.starts_with(kCall)) {
        failed_ = !kCall.starts_with(rest);
        return;
      }
      const size_t off = body.size() - rest.size() + kCall.size();
      const size_t brace = body.find('{', std::max(off, brace_scan_));
      if (brace == std::string_view::npos) {
        brace_scan_ = body.size();
        return;
      }
      const std::string name(trim(body.substr(off, brace - off)));
      if (name.empty()) {
        failed_ = true;
        return;
      }
      sink.begin(name, "");
      committed_ = true;
      args_begin_ = brace;
    }
    args_.scan(body.substr(args_begin_), sink);
  }

  size_t pos_ = kOpen.size();
  bool in_string_ = false;
  bool committed_ = false;
  bool failed_ = false;
  size_t args_begin_ = 0;
  size_t brace_scan_ = 0;
  ArgsScanner args_;
};

}  // namespace

std::unique_ptr<ToolBlock> make_gemma4_block(size_t /*marker_index*/,
                                             const ParserOptions& /*o*/) {
  return std::make_unique<Gemma4Block>();
}

}  // namespace ridge::chat
