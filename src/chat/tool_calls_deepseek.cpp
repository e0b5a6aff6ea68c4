// DeepSeek-R1 tool calls (the distill template's assistant branch):
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```
//   <｜tool▁call▁end｜>  (more calls separated by "\n") <｜tool▁calls▁end｜>
// A call is committed once its name line is complete and its arguments object has begun, then
// streamed. Before any call is committed, anything unexpected makes the whole block content (up
// to <｜tool▁calls▁end｜>); after one, the block ends where the calls stop and the rest is content.
#include <algorithm>

#include "chat/json_stream.h"
#include "chat/output_internal.h"

namespace ridge::chat {
namespace {

constexpr std::string_view kBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kSep = "<｜tool▁sep｜>";
constexpr std::string_view kFence = "```";
constexpr size_t npos = std::string_view::npos;

class DeepSeekBlock final : public ToolBlock {
 public:
  size_t find_end(std::string_view block, CallSink& sink) override {
    if (passive_) return passive_end(block);
    for (;;) {
      const std::string_view rest = block.substr(std::min(pos_, block.size()));
      switch (st_) {
        case St::kBetween: {
          const size_t ws = rest.size() - ltrim(rest).size();
          pos_ += ws;
          const std::string_view r = rest.substr(ws);
          if (r.starts_with(kEnd)) return pos_ + kEnd.size();
          if (r.starts_with(kCallBegin)) {
            call_start_ = pos_;
            enter(St::kHead, pos_ + kCallBegin.size());
            break;
          }
          if (kEnd.starts_with(r) || kCallBegin.starts_with(r)) return npos;
          return fail(block, pos_);
        }
        case St::kHead: {  // anything, then <｜tool▁sep｜> before the call's end
          const size_t sep = find(block, kSep);
          const size_t end = find(block, kCallEnd);
          if (end != npos && (sep == npos || end < sep)) return fail(block, call_start_);
          if (sep == npos) return wait(block, std::max(kSep.size(), kCallEnd.size()));
          enter(St::kName, sep + kSep.size());
          break;
        }
        case St::kName: {  // the rest of the line
          const size_t nl = find(block, "\n");
          const size_t end = find(block, kCallEnd);
          if (end != npos && (nl == npos || end < nl)) return fail(block, call_start_);
          if (nl == npos) return wait(block, kCallEnd.size());
          name_ = std::string(trim(block.substr(pos_, nl - pos_)));
          if (name_.empty()) return fail(block, call_start_);
          enter(St::kFenceLine, nl + 1);
          break;
        }
        case St::kFenceLine: {  // an optional ```json line
          const size_t ws = rest.size() - ltrim(rest).size();
          const std::string_view r = rest.substr(ws);
          if (r.starts_with(kFence)) {
            if (scan_ < pos_ + ws) scan_ = pos_ + ws;
            const size_t nl = find(block, "\n");
            const size_t end = find(block, kCallEnd);
            if (end != npos && (nl == npos || end < nl)) return fail(block, call_start_);
            if (nl == npos) return wait(block, kCallEnd.size());
            pos_ = nl + 1;
          } else if (kFence.starts_with(r)) {
            return npos;
          } else {
            pos_ += ws;
          }
          args_ = ArgsStream();
          st_ = St::kArgs;
          break;
        }
        case St::kArgs: {
          if (rest.empty()) return npos;
          const ArgsStream::Status s = args_.feed(rest[0]);
          ++pos_;
          if (s == ArgsStream::Status::kError) {
            if (!open_) return fail(block, call_start_);
            args_.close(sink);  // malformed after the name: dropped up to the call's end
            enter(St::kSkip, pos_);
            break;
          }
          if (!open_ && args_.ready()) {
            sink.begin(name_, "");
            open_ = committed_ = true;
          }
          if (open_) args_.send(sink);
          if (s == ArgsStream::Status::kDone) {
            fence_closed_ = false;
            st_ = St::kAfter;
          }
          break;
        }
        case St::kAfter: {  // whitespace, an optional ```, the call's end
          const size_t ws = rest.size() - ltrim(rest).size();
          pos_ += ws;
          const std::string_view r = rest.substr(ws);
          if (r.starts_with(kCallEnd)) {
            pos_ += kCallEnd.size();
            open_ = false;
            st_ = St::kBetween;
          } else if (!fence_closed_ && r.starts_with(kFence)) {
            pos_ += kFence.size();
            fence_closed_ = true;
          } else if (kCallEnd.starts_with(r) || (!fence_closed_ && kFence.starts_with(r))) {
            return npos;
          } else {
            enter(St::kSkip, pos_);
          }
          break;
        }
        case St::kSkip: {
          const size_t end = find(block, kCallEnd);
          if (end == npos) return wait(block, kCallEnd.size());
          pos_ = end + kCallEnd.size();
          open_ = false;
          st_ = St::kBetween;
          break;
        }
      }
    }
  }

  bool finish(std::string_view /*block*/, bool /*complete*/, CallSink& sink) override {
    if (!committed_) return false;
    if (open_) args_.close(sink);
    return true;
  }

 private:
  enum class St { kBetween, kHead, kName, kFenceLine, kArgs, kAfter, kSkip };

  void enter(St st, size_t pos) {
    st_ = st;
    pos_ = scan_ = pos;
  }
  // `what` in the block from where the search stopped last.
  size_t find(std::string_view block, std::string_view what) const {
    return block.find(what, scan_);
  }
  // Nothing found: later searches start where a marker of `len` bytes could still begin.
  size_t wait(std::string_view block, size_t len) {
    scan_ = std::max(scan_, block.size() - std::min(block.size(), len - 1));
    return npos;
  }
  // Not a call at `at`: the block ends there if it has calls, else it is all content.
  size_t fail(std::string_view block, size_t at) {
    if (committed_) return at;
    passive_ = true;
    scan_ = kBegin.size();
    return passive_end(block);
  }
  // Not calls: the block ends at <｜tool▁calls▁end｜> and stays content.
  size_t passive_end(std::string_view block) {
    const size_t p = block.find(kEnd, scan_);
    if (p != npos) return p + kEnd.size();
    return wait(block, kEnd.size());
  }

  St st_ = St::kBetween;
  size_t pos_ = kBegin.size();
  size_t scan_ = kBegin.size();
  size_t call_start_ = 0;
  std::string name_;
  ArgsStream args_;
  bool open_ = false;       // the current call was committed
  bool committed_ = false;  // a call of the block was committed
  bool fence_closed_ = false;
  bool passive_ = false;
};

}  // namespace

std::unique_ptr<ToolBlock> make_deepseek_block(size_t /*marker_index*/,
                                               const ParserOptions& /*o*/) {
  return std::make_unique<DeepSeekBlock>();
}

}  // namespace ridge::chat
