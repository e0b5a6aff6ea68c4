// <tool_call> ... </tool_call> blocks (Hermes, Qwen2.5/3, QwQ, Granite 4, Qwen3.5, Qwen3-Coder).
// The body is either JSON {"name": ..., "arguments": {...}} (its extent found by scanning the
// JSON, so "</tool_call>" inside a string does not end it) or Qwen's XML <function=...> form
// (tool_calls_xml.cpp); either body is accepted whatever the family, as models mix them.
#include <algorithm>

#include "chat/output_internal.h"

namespace ridge::chat {

bool parse_json_call(std::string_view text, RawCall& out) {
  const nlohmann::json j = parse_json(text);
  if (!j.is_object()) return false;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    return false;
  }
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  if (args == j.end()) {
    out.arguments = "{}";
  } else if (!arguments_text(*args, out.arguments)) {
    return false;
  }
  out.name = name->get<std::string>();
  return true;
}

namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";

class TaggedBlock final : public ToolBlock {
 public:
  explicit TaggedBlock(const ParserOptions& o) : tools_(o.tools) {}

  size_t find_end(std::string_view block) override {
    while (pos_ < block.size()) {
      switch (state_) {
        case State::kLead:
          if (is_space(block[pos_])) {
            ++pos_;
          } else if (block[pos_] == '{') {
            state_ = State::kJson;
            json_begin_ = pos_;
          } else if (block.substr(pos_).starts_with(kFunction)) {
            state_ = State::kXml;  // ends at the </tool_call> after </function>
          } else if (!kFunction.starts_with(block.substr(pos_))) {
            return pos_;  // neither body: not a call (prose naming the tag), released at once
          } else {
            return std::string_view::npos;  // may still be "<function="
          }
          break;
        case State::kXml: {
          const size_t p = block.find(kFunctionEnd, pos_);
          if (p == std::string_view::npos) {
            pos_ = std::max(pos_, block.size() - std::min(block.size(), kFunctionEnd.size() - 1));
            return std::string_view::npos;
          }
          pos_ = json_end_ = p + kFunctionEnd.size();
          state_ = State::kAfterJson;
          xml_ = true;
          break;
        }
        case State::kJson:
          if (json_.feed(block[pos_++])) {
            json_end_ = pos_;
            state_ = State::kAfterJson;
          }
          break;
        case State::kAfterJson: {
          if (is_space(block[pos_])) {
            ++pos_;
            break;
          }
          const std::string_view rest = block.substr(pos_);
          if (rest.starts_with(kClose)) return pos_ + kClose.size();
          if (kClose.starts_with(rest)) return std::string_view::npos;
          return json_end_;  // no close tag: the call ends with its JSON (or </function>)
        }
      }
    }
    return std::string_view::npos;
  }

  bool parse(std::string_view block, bool /*complete*/, std::vector<RawCall>& out) override {
    RawCall call;
    if (!xml_ && (state_ == State::kJson || state_ == State::kAfterJson)) {
      if (!json_.done() || json_end_ > block.size()) return false;
      if (!parse_json_call(block.substr(json_begin_, json_end_ - json_begin_), call)) {
        return false;
      }
    } else {
      if (!xml_ || json_end_ > block.size()) return false;
      const std::string_view body = block.substr(kOpen.size(), json_end_ - kOpen.size());
      if (!parse_xml_call(trim(body), tools_, call)) return false;
    }
    out.push_back(std::move(call));
    return true;
  }

 private:
  enum class State { kLead, kJson, kXml, kAfterJson };
  const nlohmann::json& tools_;
  State state_ = State::kLead;
  size_t pos_ = kOpen.size();
  JsonExtent json_;
  size_t json_begin_ = 0;
  size_t json_end_ = 0;
  bool xml_ = false;
};

}  // namespace

std::unique_ptr<ToolBlock> make_tagged_block(size_t /*marker_index*/, const ParserOptions& o) {
  return std::make_unique<TaggedBlock>(o);
}

}  // namespace ridge::chat
