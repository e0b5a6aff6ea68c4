// <tool_call> ... </tool_call> blocks (Hermes, Qwen2.5/3, QwQ, Granite 4, Qwen3.5, Qwen3-Coder).
// The body is either JSON {"name": ..., "arguments": {...}} (its extent found by scanning the
// JSON, so "</tool_call>" inside a string does not end it) or Qwen's XML <function=...> form
// (tool_calls_xml.cpp); either body is accepted whatever the family, as models mix them. Both are
// streamed: the call is committed once its name is certain and its arguments have begun.
#include <algorithm>

#include "chat/json_stream.h"
#include "chat/output_internal.h"

namespace ridge::chat {
namespace {

constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";

class TaggedBlock final : public ToolBlock {
 public:
  explicit TaggedBlock(const ParserOptions& o) : xml_call_(o.tools) {}

  size_t find_end(std::string_view block, CallSink& sink) override {
    while (pos_ < block.size()) {
      switch (state_) {
        case State::kLead:
          if (is_space(block[pos_])) {
            ++pos_;
          } else if (block[pos_] == '{') {
            state_ = State::kJson;
          } else if (block.substr(pos_).starts_with(kFunction)) {
            state_ = State::kXml;  // ends at the </tool_call> after </function>
            fn_begin_ = pos_;
          } else if (!kFunction.starts_with(block.substr(pos_))) {
            return pos_;  // neither body: not a call (prose naming the tag), released at once
          } else {
            return std::string_view::npos;  // may still be "<function="
          }
          break;
        case State::kXml: {
          const size_t p = block.find(kFunctionEnd, pos_);
          if (p == std::string_view::npos) {
            xml_call_.scan(block.substr(fn_begin_), sink);
            pos_ = std::max(pos_, block.size() - std::min(block.size(), kFunctionEnd.size() - 1));
            return std::string_view::npos;
          }
          pos_ = body_end_ = p + kFunctionEnd.size();
          xml_call_.scan(block.substr(fn_begin_, body_end_ - fn_begin_), sink);
          state_ = State::kAfterBody;
          break;
        }
        case State::kJson: {
          const char c = block[pos_++];
          if (!json_call_.failed() && !json_call_.done()) json_call_.feed(c, sink);
          if (json_.feed(c)) {
            body_end_ = pos_;
            state_ = State::kAfterBody;
          }
          break;
        }
        case State::kAfterBody: {
          if (is_space(block[pos_])) {
            ++pos_;
            break;
          }
          const std::string_view rest = block.substr(pos_);
          if (rest.starts_with(kClose)) return pos_ + kClose.size();
          if (kClose.starts_with(rest)) return std::string_view::npos;
          return body_end_;  // no close tag: the call ends with its JSON (or </function>)
        }
      }
    }
    return std::string_view::npos;
  }

  bool finish(std::string_view /*block*/, bool /*complete*/, CallSink& sink) override {
    if (xml_call_.committed()) {
      xml_call_.close(sink);
      return true;
    }
    if (json_call_.committed()) {
      json_call_.close(sink);
      return true;
    }
    return false;
  }

 private:
  enum class State { kLead, kJson, kXml, kAfterBody };
  State state_ = State::kLead;
  size_t pos_ = std::string_view("<tool_call>").size();
  JsonExtent json_;
  CallObjectStream json_call_{CallRules{}};
  XmlCallStream xml_call_;
  size_t fn_begin_ = 0;
  size_t body_end_ = 0;
};

}  // namespace

std::unique_ptr<ToolBlock> make_tagged_block(size_t /*marker_index*/, const ParserOptions& o) {
  return std::make_unique<TaggedBlock>(o);
}

}  // namespace ridge::chat
