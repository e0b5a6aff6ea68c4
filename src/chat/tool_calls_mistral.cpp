// Mistral tool calls, both forms accepted after [TOOL_CALLS] whichever template:
//   Nemo:     [TOOL_CALLS][{"name": N, "arguments": {...}, "id": "abcdefghi"}, ...]
//   Small 3.2: [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}   ([CALL_ID]ID optional; one call per
//              [TOOL_CALLS], repeated for several)
// A model-written id is kept; otherwise ids are 9 alphanumerics, as the templates require.
#include <algorithm>

#include "chat/output_internal.h"

namespace ridge::chat {
namespace {

constexpr std::string_view kTag = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";
constexpr std::string_view kCallId = "[CALL_ID]";
constexpr size_t kMaxName = 256;

class MistralBlock final : public ToolBlock {
 public:
  size_t find_end(std::string_view block) override {
    while (pos_ < block.size()) {
      switch (state_) {
        case State::kLead:
          if (is_space(block[pos_])) {
            ++pos_;
          } else if (block[pos_] == '[') {
            state_ = State::kJson;  // the Nemo array
            json_begin_ = pos_;
          } else {
            state_ = State::kName;
            name_begin_ = pos_;
          }
          break;
        case State::kName: {
          const size_t p = block.find(kArgs, pos_);
          if (p == std::string_view::npos) {
            pos_ = std::max(pos_, block.size() - std::min(block.size(), kArgs.size() - 1));
            if (block.size() - name_begin_ > kMaxName) return block.size();  // not a call
            return std::string_view::npos;
          }
          name_end_ = p;
          pos_ = p + kArgs.size();
          state_ = State::kArgsLead;
          break;
        }
        case State::kArgsLead:
          if (is_space(block[pos_])) {
            ++pos_;
          } else {
            state_ = State::kJson;
            json_begin_ = pos_;
          }
          break;
        case State::kJson:
          if (json_.feed(block[pos_++])) return pos_;
          if (!json_.started()) return pos_;  // not JSON: not a call
          break;
      }
    }
    return std::string_view::npos;
  }

  bool parse(std::string_view block, bool complete, std::vector<RawCall>& out) override {
    if (!complete || state_ != State::kJson || !json_.done()) return false;
    const nlohmann::json j = parse_json(block.substr(json_begin_));
    if (name_end_ == 0) {  // Nemo's array
      if (!j.is_array() || j.empty()) return false;
      for (const auto& c : j) {
        RawCall call;
        if (!c.is_object() || !parse_json_call(dump_json(c), call)) return false;
        const auto id = c.find("id");
        if (id != c.end() && id->is_string()) call.id = id->get<std::string>();
        out.push_back(std::move(call));
      }
      return true;
    }
    RawCall call;
    std::string_view name = block.substr(name_begin_, name_end_ - name_begin_);
    if (const size_t id = name.find(kCallId); id != std::string_view::npos) {
      call.id = std::string(trim(name.substr(id + kCallId.size())));
      name = name.substr(0, id);
    }
    name = trim(name);
    if (name.empty() || name.find_first_of("[]{}\n") != std::string_view::npos) return false;
    if (!arguments_text(j, call.arguments)) return false;
    call.name = std::string(name);
    out.push_back(std::move(call));
    return true;
  }

 private:
  enum class State { kLead, kName, kArgsLead, kJson };
  State state_ = State::kLead;
  size_t pos_ = kTag.size();
  size_t name_begin_ = 0;
  size_t name_end_ = 0;
  size_t json_begin_ = 0;
  JsonExtent json_;
};

}  // namespace

std::unique_ptr<ToolBlock> make_mistral_block(size_t /*marker_index*/,
                                              const ParserOptions& /*o*/) {
  return std::make_unique<MistralBlock>();
}

}  // namespace ridge::chat
