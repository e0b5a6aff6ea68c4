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
// A JSON value's compact text (invalid UTF-8 replaced).
std::string dump_json(const nlohmann::json& j);

// Where a block sends its calls while it is scanned: a call is committed (begin) once its name is
// certain and its arguments have begun; its arguments then follow in fragments whose
// concatenation is the call's JSON object text. Calls are numbered in order by the engine.
class CallSink {
 public:
  virtual void begin(std::string name, std::string id) = 0;
  virtual void args(std::string_view fragment) = 0;  // of the call begun last

 protected:
  ~CallSink() = default;
};

// A tool-call block: the text from an opening marker found in content up to its end.
class ToolBlock {
 public:
  virtual ~ToolBlock() = default;
  // The block so far (it only grows); scans the new part, commits calls and sends what is certain
  // of them to `sink`; returns the block's length once it is complete, else npos.
  virtual size_t find_end(std::string_view block, CallSink& sink) = 0;
  // The block ends: complete, or cut by the end of generation (complete == false; then `block`
  // may be shorter than what was scanned). A block that committed calls closes the open one's
  // arguments and returns true; one that did not either sends its calls whole now (true) or is
  // not a call (false: it stays content).
  virtual bool finish(std::string_view block, bool complete, CallSink& sink) = 0;
};

// Qwen3-Coder's XML body <function=NAME><parameter=P>V</parameter>...</function>, streamed: the
// call is committed at the name's '>', each parameter is sent ({"P":V or ,"P":V) once its value
// has ended, "}" at </function> (tool_calls_xml.cpp).
class XmlCallStream {
 public:
  explicit XmlCallStream(const nlohmann::json& tools) : tools_(tools) {}
  // `body`: the text from "<function=" on (it only grows), up to the block's first "</function>"
  // included once there is one.
  void scan(std::string_view body, CallSink& sink);
  bool committed() const { return committed_; }
  // The block ends: closes a committed call's arguments.
  void close(CallSink& sink);

 private:
  enum class St { kName, kBetween, kParamName, kValue, kDone, kError };
  void send_param(std::string_view value, CallSink& sink);
  const nlohmann::json& tools_;
  St st_ = St::kName;
  size_t pos_ = 0;   // start of the item being read
  size_t scan_ = 0;  // how far a value's end has been looked for
  std::string name_;
  std::string param_;
  bool committed_ = false;
  bool any_param_ = false;
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

// The streaming state machine of one family.
class OutputParser::Engine {
 public:
  explicit Engine(const ParserOptions& o);
  virtual ~Engine() = default;
  virtual void push(std::string_view text, OutputDelta& out) = 0;
  virtual void finish(OutputDelta& out) = 0;

 protected:
  // The sink that sends calls into `out`: a call's first delta has its index, id and name, the
  // following ones its argument fragments (joined per call within one OutputDelta).
  class Calls final : public CallSink {
   public:
    Calls(Engine& e, OutputDelta& out) : e_(e), out_(out) {}
    void begin(std::string name, std::string id) override;
    void args(std::string_view fragment) override;

   private:
    Engine& e_;
    OutputDelta& out_;
  };
  Calls calls(OutputDelta& out) { return Calls(*this, out); }
  int calls_sent() const { return next_index_; }

 private:
  std::string new_id();
  std::mt19937_64 rng_;
  bool short_ids_ = false;  // Mistral's templates require 9-character ids
  int next_index_ = 0;
};

std::unique_ptr<OutputParser::Engine> make_tagged_engine(const ParserOptions& o);
std::unique_ptr<OutputParser::Engine> make_harmony_engine(const ParserOptions& o);

}  // namespace ridge::chat
