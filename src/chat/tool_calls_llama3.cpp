// Llama 3.1 / 3.2 / 3.3 tool calls. The custom-tool form is a JSON object that is the whole
// message: {"name": NAME, "parameters": {...}} (arguments in "parameters"; "arguments" also
// accepted), recognised only at the start of the content and only for a tool of the request
// when the request lists them, so a JSON answer stays content. Llama 3.1's built-in tools follow
// <|python_tag|>: NAME.call(key="value", ...), or a JSON call, or else Python code, which becomes
// a call of "python" with {"code": ...} (as llama.cpp does).
#include <algorithm>
#include <cctype>

#include "chat/json_stream.h"
#include "chat/output_internal.h"

namespace ridge::chat {
namespace {

// The JSON call at the start of the content: committed once its name is one of the request's tools
// and its "parameters" have begun, streamed from there; until then it is held back, and a JSON
// object that is not such a call is content.
class JsonBlock final : public ToolBlock {
 public:
  explicit JsonBlock(const ParserOptions& o)
      : call_(CallRules{.arguments_required = true, .check_type = true, .tools = &o.tools,
                        .keep_id = false}) {}

  size_t find_end(std::string_view block, CallSink& sink) override {
    while (pos_ < block.size()) {
      const char c = block[pos_++];
      if (!call_.failed() && !call_.done()) call_.feed(c, sink);
      if (json_.feed(c)) return pos_;
    }
    return std::string_view::npos;
  }

  bool finish(std::string_view /*block*/, bool /*complete*/, CallSink& sink) override {
    if (!call_.committed()) return false;
    call_.close(sink);
    return true;
  }

 private:
  CallObjectStream call_;
  size_t pos_ = 0;
  JsonExtent json_;
};

// NAME.call(key="value", key2=3): the arguments as a JSON object, or false.
bool parse_builtin_call(std::string_view body, std::string& name_out, std::string& args_out) {
  const size_t dot = body.find(".call(");
  if (dot == std::string_view::npos || !body.ends_with(")")) return false;
  const std::string_view name = trim(body.substr(0, dot));
  if (name.empty()) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  std::string_view rest = body.substr(dot + 6, body.size() - dot - 7);
  nlohmann::json args = nlohmann::json::object();
  while (!(rest = ltrim(rest)).empty()) {
    const size_t eq = rest.find('=');
    if (eq == std::string_view::npos) return false;
    const std::string key(trim(rest.substr(0, eq)));
    rest = ltrim(rest.substr(eq + 1));
    if (key.empty() || rest.empty()) return false;
    if (rest[0] == '"' || rest[0] == '\'') {  // a string literal, backslash escapes kept simple
      const char q = rest[0];
      std::string v;
      size_t i = 1;
      for (; i < rest.size() && rest[i] != q; ++i) {
        if (rest[i] == '\\' && i + 1 < rest.size()) ++i;
        v += rest[i];
      }
      if (i >= rest.size()) return false;
      args[key] = v;
      rest = rest.substr(i + 1);
    } else {
      const size_t comma = rest.find(',');
      const std::string_view tok = trim(rest.substr(0, comma));
      const nlohmann::json v = parse_json(tok);
      args[key] = v.is_discarded() ? nlohmann::json(std::string(tok)) : v;
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma);
    }
    rest = ltrim(rest);
    if (!rest.empty()) {
      if (rest[0] != ',') return false;
      rest.remove_prefix(1);
    }
  }
  name_out = std::string(name);
  args_out = dump_json(args);
  return true;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// After <|python_tag|>, up to <|eom_id|> / <|eot_id|> or the end: a JSON call (streamed as in
// Hermes), NAME.call(...) (sent whole at the end: only the end tells it from code), or code
// (committed as "python" as soon as it cannot be NAME.call(...), its text streamed).
class PythonTagBlock final : public ToolBlock {
 public:
  size_t find_end(std::string_view block, CallSink& sink) override {
    const MarkerHit hit = find_marker(block.substr(pos_), kEnds);
    if (hit.found()) {  // the end marker stays for the content to drop
      scan(block.substr(0, pos_ + hit.pos), sink);
      return pos_ + hit.pos;
    }
    pos_ = std::max(pos_, block.size() - std::min<size_t>(block.size(), 9));
    scan(block.substr(0, block.size() - partial_marker_suffix(block, kEnds)), sink);
    return std::string_view::npos;
  }

  bool finish(std::string_view block, bool /*complete*/, CallSink& sink) override {
    if (mode_ == Mode::kCode) {
      send_code(block, block.size(), sink);
      std::string tail;
      writer_.flush(tail);  // an incomplete UTF-8 sequence at the end
      tail += "\"}";
      sink.args(tail);
      return true;
    }
    if (mode_ == Mode::kJson) {
      if (!call_.committed()) return false;
      call_.close(sink);
      return true;
    }
    const std::string_view body = trim(block.substr(kTag.size()));
    if (body.empty()) return false;
    std::string name;
    std::string args;
    if (!parse_builtin_call(body, name, args)) {
      name = "python";
      args = dump_json(nlohmann::json{{"code", std::string(body)}});
    }
    sink.begin(std::move(name), "");
    sink.args(args);
    return true;
  }

 private:
  enum class Mode { kLead, kJson, kName, kCallDot, kWhole, kCode };
  static constexpr std::string_view kTag = "<|python_tag|>";
  static constexpr std::string_view kDotCall = ".call(";
  static constexpr std::string_view kEnds[] = {"<|eom_id|>", "<|eot_id|>"};

  // `text`: the block up to where it may end.
  void scan(std::string_view text, CallSink& sink) {
    for (; scan_ < text.size() && mode_ != Mode::kCode; ++scan_) {
      const char c = text[scan_];
      switch (mode_) {
        case Mode::kLead:
          if (is_space(c)) break;
          begin_ = scan_;
          mode_ = c == '{' ? Mode::kJson : ident_char(c) ? Mode::kName : Mode::kCode;
          if (mode_ == Mode::kJson) call_.feed(c, sink);
          break;
        case Mode::kJson:
          if (!call_.failed() && !call_.done()) call_.feed(c, sink);
          break;
        case Mode::kName:
          if (c == '.') {
            mode_ = Mode::kCallDot;
            dot_ = 1;
          } else if (is_space(c)) {
            spaced_ = true;  // only ".call(" may follow
          } else if (spaced_ || !ident_char(c)) {
            mode_ = Mode::kCode;
          }
          break;
        case Mode::kCallDot:
          if (c != kDotCall[dot_]) {
            mode_ = Mode::kCode;
          } else if (++dot_ == kDotCall.size()) {
            mode_ = Mode::kWhole;
          }
          break;
        case Mode::kWhole:
        case Mode::kCode: break;
      }
      if (mode_ == Mode::kCode) {
        sink.begin("python", "");
        sink.args("{\"code\":\"");
        sent_ = begin_;
      }
    }
    if (mode_ == Mode::kCode) send_code(text, rtrim_len(text), sink);
    scan_ = std::max(scan_, text.size());
  }

  // The code up to `end` (trailing whitespace is held: it is trimmed at the end).
  void send_code(std::string_view text, size_t end, CallSink& sink) {
    end = std::min(end, rtrim_len(text));
    if (end <= sent_) return;
    std::string frag;
    for (size_t i = sent_; i < end; ++i) writer_.text(static_cast<unsigned char>(text[i]), frag);
    sent_ = end;
    sink.args(frag);
  }

  Mode mode_ = Mode::kLead;
  size_t pos_ = kTag.size();   // where the end marker is looked for
  size_t scan_ = kTag.size();  // next character to classify
  size_t begin_ = 0;           // first character of the body
  size_t sent_ = 0;            // code sent up to here
  size_t dot_ = 0;
  bool spaced_ = false;  // whitespace after the name
  CallObjectStream call_{CallRules{}};
  JsonStringWriter writer_;
};

}  // namespace

std::unique_ptr<ToolBlock> make_llama3_block(size_t marker_index, const ParserOptions& o) {
  if (marker_index == std::string_view::npos) return std::make_unique<JsonBlock>(o);
  return std::make_unique<PythonTagBlock>();
}

}  // namespace ridge::chat
