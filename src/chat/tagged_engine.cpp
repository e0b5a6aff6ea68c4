// The engine of every family but Harmony: an optional reasoning block at the start (<think> ...
// </think>, Gemma 4's <|channel>thought ... <channel|>), then content in which the family's
// tool-call blocks open at their markers. Text that may be the start of a marker is held back;
// so is whitespace that is dropped if a marker follows (before a tool call, before </think>).
#include "chat/output_internal.h"

namespace ridge::chat {
namespace {

class TaggedEngine final : public OutputParser::Engine {
 public:
  explicit TaggedEngine(const ParserOptions& o)
      : Engine(o), opts_(o), syntax_(tool_syntax(o)), tags_(reasoning_tags(o.format)) {
    reasoning_markers_.push_back(tags_.close);
    content_markers_ = syntax_.open_markers;
    for (std::string_view m : syntax_.end_markers) {
      reasoning_markers_.push_back(m);
      content_markers_.push_back(m);
    }
    if (o.format.think_tags && o.starts_in_reasoning) {
      mode_ = Mode::kReasoning;
      skip_ws_ = o.separate_reasoning;
      // Without separation the reasoning stays in content as written, its open tag included.
      if (!o.separate_reasoning) pending_prefix_ = tags_.open;
    }
  }

  void push(std::string_view text, OutputDelta& out) override {
    if (mode_ == Mode::kDone) return;
    (mode_ == Mode::kBlock ? block_ : buf_).append(text);
    run(false, out);
  }

  void finish(OutputDelta& out) override {
    if (mode_ == Mode::kDone) return;
    run(true, out);
    mode_ = Mode::kDone;
  }

 private:
  enum class Mode { kStart, kReasoning, kContent, kBlock, kDone };

  void run(bool eof, OutputDelta& out) {
    if (!pending_prefix_.empty()) {
      out.content += pending_prefix_;
      pending_prefix_.clear();
    }
    for (;;) {
      bool again = false;
      switch (mode_) {
        case Mode::kStart: again = step_start(eof, out); break;
        case Mode::kReasoning: again = step_text(true, eof, out); break;
        case Mode::kContent: again = step_text(false, eof, out); break;
        case Mode::kBlock: again = step_block(eof, out); break;
        case Mode::kDone: buf_.clear(); break;
      }
      if (!again) return;
    }
  }

  bool raw_reasoning() const { return !opts_.separate_reasoning; }

  // Beginning of the output: a reasoning open tag (after whitespace) or content.
  bool step_start(bool eof, OutputDelta& out) {
    if (opts_.format.think_tags) {
      const std::string_view rest = ltrim(buf_);
      if (rest.empty() && !eof) return false;
      const size_t lead = buf_.size() - rest.size();
      if (rest.starts_with(tags_.open)) {
        if (raw_reasoning()) out.content.append(buf_, 0, lead + tags_.open.size());
        buf_.erase(0, lead + tags_.open.size());
        mode_ = Mode::kReasoning;
        skip_ws_ = !raw_reasoning();
        return true;
      }
      if (!eof && tags_.open.starts_with(rest)) return false;
    }
    mode_ = Mode::kContent;
    return true;
  }

  // Reasoning or content: up to the next marker.
  bool step_text(bool reasoning, bool eof, OutputDelta& out) {
    if (!reasoning && at_content_start_ && syntax_.json_at_start) {
      const std::string_view rest = ltrim(buf_);
      if (rest.empty() && !eof) return false;
      at_content_start_ = false;
      if (rest.starts_with("{")) {
        open_block(buf_.size() - rest.size(), std::string_view::npos);
        return true;
      }
    }
    const auto& markers = reasoning ? reasoning_markers_ : content_markers_;
    const MarkerHit hit = find_marker(buf_, markers);
    if (!hit.found()) {
      const size_t keep = eof ? 0 : partial_marker_suffix(buf_, markers);
      emit_text(std::string_view(buf_).substr(0, buf_.size() - keep), reasoning, out);
      buf_.erase(0, buf_.size() - keep);
      if (eof) end_text(reasoning, out);
      return false;
    }
    emit_text(std::string_view(buf_).substr(0, hit.pos), reasoning, out);
    const std::string_view marker = markers[hit.index];
    if (reasoning && hit.index == 0) {  // the reasoning's close tag
      if (raw_reasoning()) {
        out.content += ws_;
        out.content += marker;
      }
      ws_.clear();
      buf_.erase(0, hit.pos + marker.size());
      mode_ = Mode::kContent;
      skip_ws_ = !raw_reasoning();
      at_content_start_ = true;
      return true;
    }
    if (!reasoning && hit.index < syntax_.open_markers.size()) {
      open_block(hit.pos, hit.index);
      return true;
    }
    end_text(reasoning, out);  // an end-of-turn marker: the rest is not part of the message
    mode_ = Mode::kDone;
    buf_.clear();
    return false;
  }

  // Opens a block at buf_[at]; buf_[0, at) was emitted, except the whitespace before a '{' at
  // the start (kept with the whitespace held back, restored if the block is not a call).
  void open_block(size_t at, size_t marker_index) {
    block_ws_.clear();
    if (!after_call_) block_ws_.swap(ws_);  // else ws_ holds the whitespace before the calls
    if (marker_index == std::string_view::npos) block_ws_.append(buf_, 0, at);
    block_.assign(buf_, at);
    buf_.clear();
    block_syntax_ = syntax_.make_block(marker_index, opts_);
    block_first_call_ = calls_sent();
    json_start_block_ = marker_index == std::string_view::npos;
    mode_ = Mode::kBlock;
  }

  bool step_block(bool eof, OutputDelta& out) {
    Calls sink = calls(out);
    const size_t end = block_syntax_->find_end(block_, sink);
    if (end == std::string_view::npos && !eof) return false;
    const bool complete = end != std::string_view::npos;
    size_t len = complete ? end : block_.size();
    // Cut by the end of generation, or of the turn (a committed call has taken the text).
    if (!complete && calls_sent() == block_first_call_) {
      const MarkerHit turn_end = find_marker(block_, syntax_.end_markers);
      if (turn_end.found()) len = turn_end.pos;
    }
    if (block_syntax_->finish(std::string_view(block_).substr(0, len), complete, sink)) {
      // Whitespace around calls is dropped, except that the whitespace before the first call
      // separates the content before it from content after the calls.
      if (!after_call_) ws_ = std::move(block_ws_);
      after_call_ = true;
      skip_ws_ = true;
      at_content_start_ = json_start_block_;  // Llama 3 may write several calls in a row
    } else {  // not a call: the text stays content
      out.content += ws_;
      ws_.clear();
      out.content += block_ws_;
      out.content.append(block_, 0, len);
      skip_ws_ = false;
      after_call_ = false;
    }
    block_ws_.clear();
    buf_.assign(block_, len);
    block_.clear();
    block_syntax_.reset();
    mode_ = Mode::kContent;
    return true;
  }

  // Text of the current segment: leading whitespace dropped after a tag or call, trailing
  // whitespace held back while a marker that drops it may follow.
  void emit_text(std::string_view s, bool reasoning, OutputDelta& out) {
    if (reasoning && raw_reasoning()) {
      out.content += s;
      return;
    }
    if (s.empty()) return;
    std::string& target = reasoning ? out.reasoning_content : out.content;
    if (skip_ws_) {
      s = ltrim(s);
      if (s.empty()) return;
      skip_ws_ = false;
    }
    if (!reasoning && syntax_.open_markers.empty()) {  // nothing can drop the whitespace
      target += ws_;
      ws_.clear();
      target += s;
      return;
    }
    const size_t body = rtrim_len(s);
    if (body > 0) {
      target += ws_;
      ws_.clear();
      target += s.substr(0, body);
      if (!reasoning) after_call_ = false;
    }
    ws_ += s.substr(body);
  }

  // End of the segment at the end of generation (or of the turn): reasoning is trimmed, content
  // keeps its trailing whitespace unless a call followed it.
  void end_text(bool reasoning, OutputDelta& out) {
    if (!reasoning && !after_call_) out.content += ws_;
    ws_.clear();
  }

  ParserOptions opts_;
  ToolSyntax syntax_;
  ReasoningTags tags_;
  std::vector<std::string_view> reasoning_markers_;
  std::vector<std::string_view> content_markers_;
  Mode mode_ = Mode::kStart;
  std::string pending_prefix_;
  std::string buf_;       // undecided text (a possible marker prefix)
  std::string ws_;        // trailing whitespace held back
  bool skip_ws_ = false;  // drop the leading whitespace of the current segment
  bool at_content_start_ = true;
  bool after_call_ = false;  // no content since the last call: held whitespace is dropped
  std::string block_;     // the tool-call block being read
  std::string block_ws_;  // whitespace dropped before it (restored if it is not a call)
  std::unique_ptr<ToolBlock> block_syntax_;
  bool json_start_block_ = false;
  int block_first_call_ = 0;  // calls sent before the block
};

}  // namespace

std::unique_ptr<OutputParser::Engine> make_tagged_engine(const ParserOptions& o) {
  return std::make_unique<TaggedEngine>(o);
}

}  // namespace ridge::chat
