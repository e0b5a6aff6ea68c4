// Internals shared by the output parser's files: marker scanning, the JSON extent scanner, the
// tool-call block interface each family implements, and the engines.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/output_format.h"
#include "chat/output_parser.h"

namespace ridge::chat {

inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
std::string_view trim(std::string_view s);
std::string_view ltrim(std::string_view s);
size_t rtrim_len(std::string_view s);  // length without trailing whitespace

struct ReasoningTags {
  std::string_view open;
  std::string_view close;
};
ReasoningTags reasoning_tags(const FormatInfo& f);

// Earliest complete occurrence of any marker in buf (ties: the longest marker).
struct MarkerHit {
  size_t pos = std::string_view::npos;
  size_t index = 0;  // into markers
  bool found() const { return pos != std::string_view::npos; }
};
MarkerHit find_marker(std::string_view buf, std::span<const std::string_view> markers);
// Length of the longest suffix of buf that is a proper prefix of some marker (to hold back).
size_t partial_marker_suffix(std::string_view buf, std::span<const std::string_view> markers);

// Finds where a JSON object or array ends, one character at a time (strings and escapes
// understood, nothing else validated): the caller parses the extent with nlohmann.
class JsonExtent {
 public:
  // Feeds one character; true when it closed the top-level value.
  bool feed(char c);
  bool started() const { return depth_ > 0 || done_; }
  bool done() const { return done_; }

 private:
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  bool done_ = false;
};

// Parses JSON without throwing; a discarded value on error.
nlohmann::json parse_json(std::string_view text);
// A JSON object's compact text (invalid UTF-8 replaced).
std::string dump_json(const nlohmann::json& j);
// The "arguments" member of a call object as object text: an object, or a string holding one.
// False when it is neither (then the call is malformed).
bool arguments_text(const nlohmann::json& args, std::string& out);

struct RawCall {
  std::string name;
  std::string arguments;  // JSON object text
  std::string id;         // when the model wrote one (Mistral)
};

// A tool-call block: the text from an opening marker found in content up to its end.
class ToolBlock {
 public:
  virtual ~ToolBlock() = default;
  // The block so far (it only grows); scans the new part and returns the block's length once it
  // is complete, else npos.
  virtual size_t find_end(std::string_view block) = 0;
  // Parses the block: complete, or cut by the end of generation (complete == false). False when
  // it is not a well-formed call: the block then stays content.
  virtual bool parse(std::string_view block, bool complete, std::vector<RawCall>& out) = 0;
};

// A family's tool-call syntax inside content.
struct ToolSyntax {
  std::vector<std::string_view> open_markers;
  bool json_at_start = false;  // Llama 3: content that starts with '{' is a call candidate
  std::vector<std::string_view> end_markers;  // end of turn: the rest of the output is dropped
  // The block for open_markers[i]; i == npos for the '{' at the start.
  std::unique_ptr<ToolBlock> (*make_block)(size_t marker_index, const ParserOptions& o) = nullptr;
};
ToolSyntax tool_syntax(const ParserOptions& o);

// Per-family pieces (one file each).
std::unique_ptr<ToolBlock> make_tagged_block(size_t marker_index, const ParserOptions& o);
std::unique_ptr<ToolBlock> make_llama3_block(size_t marker_index, const ParserOptions& o);
std::unique_ptr<ToolBlock> make_mistral_block(size_t marker_index, const ParserOptions& o);
std::unique_ptr<ToolBlock> make_deepseek_block(size_t marker_index, const ParserOptions& o);
std::unique_ptr<ToolBlock> make_gemma4_block(size_t marker_index, const ParserOptions& o);
// Hermes' JSON body {"name": ..., "arguments": ...} (Llama 3 also accepts "parameters").
bool parse_json_call(std::string_view text, RawCall& out);
// Qwen3-Coder's XML body <function=NAME><parameter=P>V</parameter>...</function>.
bool parse_xml_call(std::string_view text, const nlohmann::json& tools, RawCall& out);

// The streaming state machine of one family.
class OutputParser::Engine {
 public:
  explicit Engine(const ParserOptions& o);
  virtual ~Engine() = default;
  virtual void push(std::string_view text, OutputDelta& out) = 0;
  virtual void finish(OutputDelta& out) = 0;

 protected:
  // Appends a complete call to out (index, id and the whole arguments in one delta).
  void emit_call(RawCall call, OutputDelta& out);

 private:
  std::string new_id();
  std::mt19937_64 rng_;
  bool short_ids_ = false;  // Mistral's templates require 9-character ids
  int next_index_ = 0;
};

std::unique_ptr<OutputParser::Engine> make_tagged_engine(const ParserOptions& o);
std::unique_ptr<OutputParser::Engine> make_harmony_engine(const ParserOptions& o);

}  // namespace ridge::chat
