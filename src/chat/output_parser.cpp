// OutputParser: picks the family's engine, assembles the result from the deltas, names the
// calls (index, id) and sends their deltas.
#include "chat/output_parser.h"

#include "chat/output_internal.h"

namespace ridge::chat {

ToolSyntax tool_syntax(const ParserOptions& o) {
  ToolSyntax s;
  s.end_markers = {"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>",
                   "<｜end▁of▁sentence｜>", "<end_of_turn>", "<|endoftext|>", "<|end|>"};
  switch (o.format.tools) {
    case OutputFormat::kHermes:
    case OutputFormat::kQwenXml:
      s.open_markers = {"<tool_call>"};
      s.make_block = make_tagged_block;
      break;
    case OutputFormat::kLlama3Json:
      s.open_markers = {"<|python_tag|>"};
      s.json_at_start = true;
      s.make_block = make_llama3_block;
      break;
    case OutputFormat::kMistralNemo:
    case OutputFormat::kMistralSmall:
      s.open_markers = {"[TOOL_CALLS]"};
      s.end_markers.push_back("</s>");
      s.make_block = make_mistral_block;
      break;
    case OutputFormat::kDeepSeekR1:
      s.open_markers = {"<｜tool▁calls▁begin｜>"};
      s.make_block = make_deepseek_block;
      break;
    case OutputFormat::kGemma4:
      s.open_markers = {"<|tool_call>"};
      s.end_markers.push_back("<turn|>");
      s.end_markers.push_back("<|tool_response>");
      s.make_block = make_gemma4_block;
      break;
    case OutputFormat::kContentOnly:
    case OutputFormat::kHarmony:
      break;
  }
  if (!o.parse_tools) {
    s.open_markers.clear();
    s.json_at_start = false;
  }
  return s;
}

OutputParser::Engine::Engine(const ParserOptions& o)
    : short_ids_(o.format.tools == OutputFormat::kMistralNemo ||
                 o.format.tools == OutputFormat::kMistralSmall) {
  if (o.id_seed != 0) {
    rng_.seed(o.id_seed);
  } else {
    std::random_device rd;
    rng_.seed((static_cast<uint64_t>(rd()) << 32) ^ rd());
  }
}

std::string OutputParser::Engine::new_id() {
  static constexpr std::string_view kAlnum =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id = short_ids_ ? "" : "call_";
  const int n = short_ids_ ? 9 : 24;
  for (int i = 0; i < n; ++i) id += kAlnum[rng_() % kAlnum.size()];
  return id;
}

void OutputParser::Engine::Calls::begin(std::string name, std::string id) {
  ToolCallDelta d;
  d.index = e_.next_index_++;
  d.id = id.empty() ? e_.new_id() : std::move(id);
  d.name = std::move(name);
  out_.tool_calls.push_back(std::move(d));
}

void OutputParser::Engine::Calls::args(std::string_view fragment) {
  if (fragment.empty() || e_.next_index_ == 0) return;
  const int index = e_.next_index_ - 1;
  auto& calls = out_.tool_calls;
  if (calls.empty() || calls.back().index != index || !calls.back().name.empty()) {
    calls.push_back({.index = index, .id = {}, .name = {}, .arguments_fragment = {}});
  }
  calls.back().arguments_fragment += fragment;
}

OutputParser::OutputParser(ParserOptions opts) {
  engine_ = opts.format.tools == OutputFormat::kHarmony ? make_harmony_engine(opts)
                                                          : make_tagged_engine(opts);
}

OutputParser::~OutputParser() = default;
OutputParser::OutputParser(OutputParser&&) noexcept = default;
OutputParser& OutputParser::operator=(OutputParser&&) noexcept = default;

void OutputParser::apply(const OutputDelta& d) {
  result_.content += d.content;
  result_.reasoning_content += d.reasoning_content;
  for (const ToolCallDelta& t : d.tool_calls) {
    if (t.index >= static_cast<int>(result_.tool_calls.size())) {
      result_.tool_calls.push_back({t.id, t.name, ""});
    }
    result_.tool_calls[static_cast<size_t>(t.index)].arguments += t.arguments_fragment;
  }
}

OutputDelta OutputParser::push(std::string_view text) {
  OutputDelta d;
  if (finished_ || text.empty()) return d;
  engine_->push(text, d);
  apply(d);
  return d;
}

OutputDelta OutputParser::finish() {
  OutputDelta d;
  if (finished_) return d;
  finished_ = true;
  engine_->finish(d);
  apply(d);
  return d;
}

const ParsedOutput& OutputParser::result() const { return result_; }

ParsedOutput parse_output(std::string_view text, const ParserOptions& opts) {
  OutputParser p(opts);
  p.push(text);
  p.finish();
  return p.result();
}

}  // namespace ridge::chat
