// DeepSeek-R1 tool calls (the distill template's assistant branch):
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```
//   <｜tool▁call▁end｜>  (more calls separated by "\n") <｜tool▁calls▁end｜>
// The block ends at <｜tool▁calls▁end｜>; cut by the end of generation, it is still calls if
// every call in it is complete.
#include <algorithm>

#include "chat/output_internal.h"

namespace ridge::chat {
namespace {

constexpr std::string_view kBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kSep = "<｜tool▁sep｜>";

class DeepSeekBlock final : public ToolBlock {
 public:
  size_t find_end(std::string_view block) override {
    const size_t p = block.find(kEnd, pos_);
    if (p != std::string_view::npos) return p + kEnd.size();
    pos_ = std::max(pos_, block.size() - std::min(block.size(), kEnd.size() - 1));
    return std::string_view::npos;
  }

  bool parse(std::string_view block, bool complete, std::vector<RawCall>& out) override {
    std::string_view rest = block.substr(kBegin.size());
    if (complete) rest.remove_suffix(kEnd.size());
    std::vector<RawCall> calls;
    while (!(rest = ltrim(rest)).empty()) {
      if (!rest.starts_with(kCallBegin)) return false;
      rest.remove_prefix(kCallBegin.size());
      const size_t sep = rest.find(kSep);
      const size_t end = rest.find(kCallEnd);
      if (sep == std::string_view::npos || end == std::string_view::npos || sep > end) {
        return false;
      }
      std::string_view body = rest.substr(sep + kSep.size(), end - sep - kSep.size());
      rest.remove_prefix(end + kCallEnd.size());
      const size_t nl = body.find('\n');
      if (nl == std::string_view::npos) return false;
      RawCall call;
      call.name = std::string(trim(body.substr(0, nl)));
      body = trim(body.substr(nl + 1));
      if (body.starts_with("```")) {  // ```json ... ```
        const size_t eol = body.find('\n');
        if (eol == std::string_view::npos) return false;
        body = body.substr(eol + 1);
        if (body.ends_with("```")) body.remove_suffix(3);
      }
      if (call.name.empty() || !arguments_text(parse_json(trim(body)), call.arguments)) {
        return false;
      }
      calls.push_back(std::move(call));
    }
    if (calls.empty()) return false;
    for (auto& c : calls) out.push_back(std::move(c));
    return true;
  }

 private:
  size_t pos_ = kBegin.size();
};

}  // namespace

std::unique_ptr<ToolBlock> make_deepseek_block(size_t /*marker_index*/,
                                               const ParserOptions& /*o*/) {
  return std::make_unique<DeepSeekBlock>();
}

}  // namespace ridge::chat
