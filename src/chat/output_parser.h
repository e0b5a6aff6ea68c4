// A chat model's generated text -> OpenAI `content`, `reasoning_content` and `tool_calls`,
// streamed (push / finish) or at once (parse_output). The syntax per family, the hold-back rules
// and the edge cases are in docs/chat_output.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/output_format.h"

namespace ridge::chat {

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text of an object
};

// Delta of one step of streaming.
struct ToolCallDelta {
  int index = 0;
  std::string id;    // set in the first delta of a call only
  std::string name;  // set in the first delta of a call only
  std::string arguments_fragment;  // empty in the first delta; the fragments add up to arguments
};

struct OutputDelta {
  std::string content;
  std::string reasoning_content;
  // OpenAI semantics: the first delta of a call carries id + name, later ones only argument
  // fragments (one entry per call after the first delta).
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && reasoning_content.empty() && tool_calls.empty(); }
};

struct ParsedOutput {
  std::string content;
  std::string reasoning_content;
  std::vector<ToolCall> tool_calls;
};

struct ParserOptions {
  FormatInfo format;
  bool starts_in_reasoning = false;  // the prompt ends inside an opened <think> (or Harmony's
                                     // analysis); see prompt_ends_in_reasoning()
  bool parse_tools = true;           // false: no tools / tool_choice "none": call text is content
  bool separate_reasoning = true;    // false: --reasoning-format none, <think> text stays content
  nlohmann::json tools;              // the request's tools (for XML parameter types); may be null
  uint64_t id_seed = 0;              // tool-call ids' generator seed; 0: random
};

class OutputParser {
 public:
  explicit OutputParser(ParserOptions opts);
  ~OutputParser();
  OutputParser(OutputParser&&) noexcept;
  OutputParser& operator=(OutputParser&&) noexcept;

  // Feeds the next piece of generated text (UTF-8 complete). Returns what may be sent now: text
  // that could still be the start of a marker (e.g. "<tool" or "<th") is held back until it is
  // decided; a tool call's first delta is sent once its name is certain and its arguments have
  // begun, then its arguments in fragments (docs/chat_output.md).
  OutputDelta push(std::string_view text);
  // End of generation: flushes everything held back (an unfinished tool call becomes content if
  // it was not sent yet, else its arguments are closed into valid JSON).
  // Further push() / finish() calls return nothing.
  OutputDelta finish();
  // The whole result so far (the concatenation of all deltas, tool calls assembled).
  const ParsedOutput& result() const;

  class Engine;  // the per-family state machine (output_internal.h)

 private:
  void apply(const OutputDelta& d);
  std::unique_ptr<Engine> engine_;
  ParsedOutput result_;
  bool finished_ = false;
};

// Convenience: parses a complete text at once (== push(all) + finish()).
ParsedOutput parse_output(std::string_view text, const ParserOptions& opts);

}  // namespace ridge::chat
