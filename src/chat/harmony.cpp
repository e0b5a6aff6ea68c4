// gpt-oss Harmony. The generated text starts after the prompt's "<|start|>assistant" with a
// message header; messages follow each other as <|start|>assistant HEADER<|message|>BODY END:
//   <|channel|>analysis<|message|>...<|end|>             -> reasoning_content
//   <|channel|>final<|message|>...<|return|>             -> content
//   <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}<|call|>
//   (or " to=functions.NAME<|channel|>commentary json", as the template writes it) -> a tool call
//   <|channel|>commentary<|message|>... (no recipient: a preamble) -> content
// Text outside any header (a model not following Harmony) is content. A call is committed once
// its header is complete and its body's arguments object has begun, then streamed.
#include <algorithm>

#include "chat/json_stream.h"
#include "chat/output_internal.h"

namespace ridge::chat {
namespace {

constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr size_t kMaxHeader = 4096;
// What ends a message body; <|start|> and <|channel|> also begin the next (a missing <|end|>).
constexpr std::string_view kBodyEnds[] = {"<|end|>", "<|call|>", "<|return|>", kStart,
                                          kChannel};
// What may open a header at the very start of the output.
constexpr std::string_view kFirstHeader[] = {kChannel, kStart, " to=", "to=", "<|constrain|>"};

// The word after `key` in a header ("" if absent).
std::string header_word(std::string_view header, std::string_view key) {
  const size_t p = header.find(key);
  if (p == std::string_view::npos) return "";
  const std::string_view rest = header.substr(p + key.size());
  size_t e = 0;
  while (e < rest.size() && !is_space(rest[e]) && rest[e] != '<') ++e;
  return std::string(rest.substr(0, e));
}

class HarmonyEngine final : public OutputParser::Engine {
 public:
  explicit HarmonyEngine(const ParserOptions& o) : Engine(o), opts_(o) {
    if (o.starts_in_reasoning) {  // the prompt ended with <|channel|>analysis<|message|>
      mode_ = Mode::kBody;
      dest_ = Dest::kReasoning;
      first_ = false;
    }
  }

  void push(std::string_view text, OutputDelta& out) override {
    if (mode_ == Mode::kDone) return;
    buf_.append(text);
    run(false, out);
  }

  void finish(OutputDelta& out) override {
    if (mode_ == Mode::kDone) return;
    run(true, out);
    if (mode_ == Mode::kBody) end_body("", out);
    mode_ = Mode::kDone;  // a header cut by the end of generation carries no text: dropped
  }

 private:
  enum class Mode { kBetween, kHeader, kBody, kDone };
  enum class Dest { kReasoning, kContent, kTool };

  void run(bool eof, OutputDelta& out) {
    for (;;) {
      bool again = false;
      switch (mode_) {
        case Mode::kBetween: again = step_between(eof); break;
        case Mode::kHeader: again = step_header(out); break;
        case Mode::kBody: again = step_body(eof, out); break;
        case Mode::kDone: break;
      }
      if (!again) return;
    }
  }

  bool step_between(bool eof) {
    const std::string_view rest = first_ ? std::string_view(buf_) : ltrim(buf_);
    if (rest.empty()) return false;
    const std::string_view* opens = first_ ? kFirstHeader : kBodyEnds + 3;
    const size_t n = first_ ? std::size(kFirstHeader) : 2;
    for (size_t i = 0; i < n; ++i) {
      if (rest.starts_with(opens[i])) {
        buf_.erase(0, buf_.size() - rest.size() + (opens[i] == kStart ? kStart.size() : 0));
        mode_ = Mode::kHeader;
        header_scan_ = 0;
        first_ = false;
        return true;
      }
      if (!eof && opens[i].starts_with(rest)) return false;
    }
    first_ = false;
    mode_ = Mode::kBody;  // free text
    dest_ = Dest::kContent;
    return true;
  }

  bool step_header(OutputDelta& out) {
    const size_t p = buf_.find(kMessage, header_scan_);
    if (p == std::string::npos) {
      header_scan_ = buf_.size() - std::min(buf_.size(), kMessage.size() - 1);
      if (buf_.size() > kMaxHeader) {  // not a header after all
        mode_ = Mode::kBody;
        dest_ = Dest::kContent;
        return true;
      }
      return false;
    }
    const std::string_view header = std::string_view(buf_).substr(0, p);
    const std::string channel = header_word(header, kChannel);
    std::string recipient = header_word(header, "to=");
    tool_name_.clear();
    if (!recipient.empty() && recipient != "assistant" && opts_.parse_tools) {
      dest_ = Dest::kTool;
      tool_name_ = recipient.starts_with("functions.") ? recipient.substr(10) : recipient;
      tool_body_.clear();
      tool_args_ = ArgsStream();
      tool_open_ = false;
      tool_failed_ = tool_name_.empty();
    } else if (channel == "analysis") {
      dest_ = Dest::kReasoning;
      if (!opts_.separate_reasoning) out.content.append(buf_, 0, p + kMessage.size());
    } else {
      dest_ = Dest::kContent;
    }
    buf_.erase(0, p + kMessage.size());
    mode_ = Mode::kBody;
    return true;
  }

  bool step_body(bool eof, OutputDelta& out) {
    const MarkerHit hit = find_marker(buf_, kBodyEnds);
    if (!hit.found()) {
      const size_t keep = eof ? 0 : partial_marker_suffix(buf_, kBodyEnds);
      body_text(std::string_view(buf_).substr(0, buf_.size() - keep), out);
      buf_.erase(0, buf_.size() - keep);
      return false;
    }
    body_text(std::string_view(buf_).substr(0, hit.pos), out);
    const std::string_view marker = kBodyEnds[hit.index];
    const bool opens_next = marker == kStart || marker == kChannel;
    end_body(opens_next ? "" : marker, out);
    buf_.erase(0, hit.pos + (opens_next ? 0 : marker.size()));
    mode_ = Mode::kBetween;
    return true;
  }

  void body_text(std::string_view s, OutputDelta& out) {
    switch (dest_) {
      case Dest::kReasoning:
        (opts_.separate_reasoning ? out.reasoning_content : out.content) += s;
        break;
      case Dest::kContent: out.content += s; break;
      case Dest::kTool: tool_text(s, out); break;
    }
  }

  // A call's body: committed once its arguments object has begun, then streamed; held back
  // until then (it is content if it turns out not to be arguments).
  void tool_text(std::string_view s, OutputDelta& out) {
    if (!tool_open_) tool_body_ += s;
    if (tool_failed_ || tool_args_.done()) return;
    Calls sink = calls(out);
    for (char c : s) {
      const ArgsStream::Status st = tool_args_.feed(c);
      if (st == ArgsStream::Status::kError) {
        tool_failed_ = true;  // after the commit: the rest of the body is dropped
        return;
      }
      if (!tool_open_ && tool_args_.ready()) {
        sink.begin(tool_name_, "");
        tool_open_ = true;
        tool_body_.clear();
      }
      if (tool_open_) tool_args_.send(sink);
      if (st == ArgsStream::Status::kDone) return;
    }
  }

  // The message ends (with `marker`, "" at the end of generation or before the next header).
  void end_body(std::string_view marker, OutputDelta& out) {
    if (dest_ == Dest::kReasoning && !opts_.separate_reasoning) out.content += marker;
    if (dest_ == Dest::kTool) {
      if (tool_open_) {
        Calls sink = calls(out);
        tool_args_.close(sink);  // nothing when they are complete
      } else {
        out.content += tool_body_;  // arguments that do not parse stay content
      }
      tool_body_.clear();
      tool_open_ = false;
    }
    dest_ = Dest::kContent;
  }

  ParserOptions opts_;
  Mode mode_ = Mode::kBetween;
  Dest dest_ = Dest::kContent;
  bool first_ = true;
  std::string buf_;
  size_t header_scan_ = 0;
  std::string tool_name_;
  std::string tool_body_;  // until the call is committed
  ArgsStream tool_args_;
  bool tool_open_ = false;    // the call was committed
  bool tool_failed_ = false;  // not arguments (or malformed after the commit)
};

}  // namespace

std::unique_ptr<OutputParser::Engine> make_harmony_engine(const ParserOptions& o) {
  return std::make_unique<HarmonyEngine>(o);
}

}  // namespace ridge::chat
