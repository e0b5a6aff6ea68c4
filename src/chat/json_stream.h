// Incremental JSON of the output parser: a validating minifier that turns JSON text into its
// compact form one character at a time (whitespace outside strings removed, invalid UTF-8
// replaced, control characters and lone surrogates escaped) and holds back only what a cut could
// make invalid; a call's arguments value; and the {"name": ..., "arguments": ...} call object the
// JSON families share. docs/chat_output.md has the rules.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/output_internal.h"

namespace ridge::chat {

// Writes the content of a JSON string byte by byte: valid UTF-8 is copied (an incomplete sequence
// waits for its next bytes), an invalid byte becomes U+FFFD.
class JsonStringWriter {
 public:
  // A byte of plain text: quotes, backslashes and control characters are escaped.
  void text(unsigned char b, std::string& out);
  // A byte >= 0x80 of a JSON string's raw text.
  void utf8(unsigned char b, std::string& out);
  // Ends a pending sequence (it is incomplete: replaced).
  void flush(std::string& out);
  static void control(unsigned char b, std::string& out);

 private:
  std::string seq_;
  int need_ = 0;
  unsigned char lo_ = 0x80;
  unsigned char hi_ = 0xBF;
};

class JsonMinifier {
 public:
  enum class Status {
    kMore,   // consumed, the value goes on
    kDone,   // consumed, the value is complete
    kEnded,  // the value (a number) ended before this character, which is not consumed
    kError,  // not JSON: nothing more is taken
  };
  Status feed(char c);
  // The compact text that is certain so far (taken: the next call returns what follows).
  std::string take() { return std::exchange(out_, {}); }
  // What closes the text taken so far into a valid value: an open string's quote, then the
  // closers of the open containers.
  std::string closers() const;
  bool done() const { return st_ == St::kDone && !error_; }
  bool failed() const { return error_; }
  // Characters outside strings (not whitespace) taken: 2 for "{" and the token after it.
  size_t significant() const { return significant_; }

 private:
  enum class St { kValue, kKey, kColon, kAfter, kString, kNumber, kLiteral, kDone };
  Status value_start(char c);
  Status string_char(unsigned char c);
  bool number_char(char c);
  bool number_complete() const;
  void unicode_escape();
  void resolve_high();
  Status close(char c);
  Status after_value();
  Status fail() {
    error_ = true;
    return Status::kError;
  }
  void flush() {
    out_ += held_;
    held_.clear();
  }

  St st_ = St::kValue;
  bool error_ = false;
  bool allow_close_ = false;  // right after '{' or '['
  bool key_ = false;          // the open string is an object key
  std::vector<char> stack_;   // open containers
  int esc_ = 0;               // 1: after '\', 2..5: \u and that many - 2 hex digits
  std::string esc_buf_;
  std::string high_;  // a \u escape of a high surrogate, until its low one
  int num_ = 0;       // number grammar state
  std::string_view lit_;
  size_t lit_pos_ = 0;
  size_t significant_ = 0;
  JsonStringWriter w_;
  std::string out_;   // certain, not taken yet
  std::string held_;  // written but uncertain: ',' and a key until the next value starts, a
                      // number or literal until it ends
};

// A call's arguments value: an object, streamed as compact text, or a JSON string holding one
// (its compact text comes whole, once the string is complete).
class ArgsStream {
 public:
  using Status = JsonMinifier::Status;
  Status feed(char c);
  // The call may be committed: the object's first token after '{' is valid (or it is complete).
  bool ready() const;
  bool done() const { return done_; }
  // Sends what is certain and not sent yet.
  void send(CallSink& sink);
  // The arguments are cut or malformed: sends what closes the text sent ("{}" if none).
  void close(CallSink& sink);

 private:
  JsonMinifier m_;
  bool started_ = false;
  bool string_form_ = false;
  bool done_ = false;
  bool error_ = false;
  bool sent_any_ = false;
  std::string text_;  // the string form's object text, until sent
};

struct CallRules {
  bool arguments_required = false;        // Llama 3: "parameters" or "arguments" must be there
  bool check_type = false;                // Llama 3: a "type" must be "function"
  const nlohmann::json* tools = nullptr;  // Llama 3: the name must be one of them, if listed
  bool keep_id = false;                   // Mistral Nemo: an "id" written before the arguments
};

// {"name": N, "arguments" | "parameters": {...}, ...}: the call is committed when the name is
// known (and allowed) and the arguments have begun (ready()), or at the closing '}' when there
// are no arguments; before that nothing is sent.
class CallObjectStream {
 public:
  using Status = JsonMinifier::Status;
  explicit CallObjectStream(CallRules rules) : rules_(rules) {}
  Status feed(char c, CallSink& sink);
  bool committed() const { return committed_; }
  bool done() const { return st_ == St::kDone; }
  bool failed() const { return st_ == St::kError; }
  // The object is cut or malformed: closes a committed call's arguments.
  void close(CallSink& sink);

 private:
  enum class St { kStart, kKey, kKeyString, kColon, kValue, kAfter, kDone, kError };
  enum class Field { kOther, kName, kArgs, kId, kType };
  Status value_end(CallSink& sink);
  Status end_object(CallSink& sink);
  void try_commit(CallSink& sink);
  Status fail() {
    st_ = St::kError;
    return Status::kError;
  }

  CallRules rules_;
  St st_ = St::kStart;
  bool first_key_ = true;
  Field field_ = Field::kOther;
  JsonMinifier key_;
  JsonMinifier value_;
  ArgsStream args_;
  bool args_seen_ = false;
  bool named_ = false;
  bool committed_ = false;
  std::string name_;
  std::string id_;
};

// Whether `name` is one of the request's tools (true when none are listed).
bool known_tool(const nlohmann::json& tools, const std::string& name);

}  // namespace ridge::chat
