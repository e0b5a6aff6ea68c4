// Mistral tool calls, both forms accepted after [TOOL_CALLS] whichever template:
//   Nemo:     [TOOL_CALLS][{"name": N, "arguments": {...}, "id": "abcdefghi"}, ...]
//   Small 3.2: [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}   ([CALL_ID]ID optional; one call per
//              [TOOL_CALLS], repeated for several)
// A model-written id is kept when it comes before the arguments (once a call's name has been sent,
// its id cannot change); otherwise ids are 9 alphanumerics, as the templates require. Calls are
// committed once the name is known and the arguments object has begun, then streamed.
#include <algorithm>
#include <optional>

#include "chat/json_stream.h"
#include "chat/output_internal.h"

namespace ridge::chat {
namespace {

constexpr std::string_view kTag = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";
constexpr std::string_view kCallId = "[CALL_ID]";
constexpr size_t kMaxName = 256;

// Nemo's array of call objects, each streamed as in Hermes (an "id" written before the
// arguments is kept).
class NemoArray {
 public:
  void feed(char c, CallSink& sink) {
    switch (st_) {
      case St::kOpen:
        st_ = c == '[' ? St::kFirst : St::kError;
        break;
      case St::kFirst:
      case St::kNext:
        if (is_space(c)) break;
        if (c != '{') {
          st_ = St::kError;
          break;
        }
        call_.emplace(CallRules{.keep_id = true});
        st_ = St::kCall;
        [[fallthrough]];
      case St::kCall:
        call_->feed(c, sink);
        committed_ = committed_ || call_->committed();
        if (call_->failed()) st_ = St::kError;
        if (call_->done()) st_ = St::kAfter;
        break;
      case St::kAfter:
        if (is_space(c)) break;
        st_ = c == ',' ? St::kNext : c == ']' ? St::kDone : St::kError;
        break;
      case St::kDone:
      case St::kError: break;
    }
  }
  bool committed() const { return committed_; }
  void close(CallSink& sink) {
    if (call_) call_->close(sink);
  }

 private:
  enum class St { kOpen, kFirst, kCall, kAfter, kNext, kDone, kError };
  St st_ = St::kOpen;
  std::optional<CallObjectStream> call_;
  bool committed_ = false;
};

class MistralBlock final : public ToolBlock {
 public:
  size_t find_end(std::string_view block, CallSink& sink) override {
    while (pos_ < block.size()) {
      switch (state_) {
        case State::kLead:
          if (is_space(block[pos_])) {
            ++pos_;
          } else if (block[pos_] == '[') {
            state_ = State::kJson;  // the Nemo array
            nemo_ = true;
          } else {
            state_ = State::kName;
            name_begin_ = pos_;
          }
          break;
        case State::kName: {
          // [ARGS] within kMaxName bytes of the name's start, else not a call.
          const size_t limit = name_begin_ + kMaxName + kArgs.size();
          const size_t p = block.substr(0, std::min(block.size(), limit)).find(kArgs, pos_);
          if (p == std::string_view::npos) {
            if (block.size() >= limit) return limit;
            pos_ = std::max(pos_, block.size() - std::min(block.size(), kArgs.size() - 1));
            return std::string_view::npos;
          }
          name_ok_ = split_name(block.substr(name_begin_, p - name_begin_));
          pos_ = p + kArgs.size();
          state_ = State::kArgsLead;
          break;
        }
        case State::kArgsLead:
          if (is_space(block[pos_])) {
            ++pos_;
          } else {
            state_ = State::kJson;
          }
          break;
        case State::kJson: {
          const char c = block[pos_++];
          if (nemo_) {
            nemo_array_.feed(c, sink);
          } else if (name_ok_ && args_.feed(c) != ArgsStream::Status::kError) {
            if (!committed_ && args_.ready()) {
              sink.begin(name_, id_);
              committed_ = true;
            }
            if (committed_) args_.send(sink);
          }
          if (json_.feed(c)) return pos_;
          if (!json_.started()) return pos_;  // not JSON: not a call
          break;
        }
      }
    }
    return std::string_view::npos;
  }

  bool finish(std::string_view /*block*/, bool /*complete*/, CallSink& sink) override {
    if (nemo_array_.committed()) {
      nemo_array_.close(sink);
      return true;
    }
    if (!committed_) return false;
    args_.close(sink);
    return true;
  }

 private:
  enum class State { kLead, kName, kArgsLead, kJson };

  // NAME or NAME[CALL_ID]ID before [ARGS].
  bool split_name(std::string_view name) {
    if (const size_t id = name.find(kCallId); id != std::string_view::npos) {
      id_ = std::string(trim(name.substr(id + kCallId.size())));
      name = name.substr(0, id);
    }
    name = trim(name);
    name_ = std::string(name);
    return !name.empty() && name.find_first_of("[]{}\n") == std::string_view::npos;
  }

  State state_ = State::kLead;
  size_t pos_ = kTag.size();
  size_t name_begin_ = 0;
  bool nemo_ = false;
  bool name_ok_ = false;
  bool committed_ = false;
  std::string name_;
  std::string id_;
  JsonExtent json_;
  NemoArray nemo_array_;
  ArgsStream args_;
};

}  // namespace

std::unique_ptr<ToolBlock> make_mistral_block(size_t /*marker_index*/,
                                              const ParserOptions& /*o*/) {
  return std::make_unique<MistralBlock>();
}

}  // namespace ridge::chat
