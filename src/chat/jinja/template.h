// A Jinja interpreter for chat templates (tokenizer.chat_template), rendering byte-identically to
// Python's jinja2 with Hugging Face apply_chat_template conventions. See docs/chat_templates.md.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/status.h"
#include "tokenizer/tokenizer.h"

namespace ridge::chat::jinja {

struct TemplateAst;  // parser output (ast.h)

struct RenderOptions {
  int64_t now_unix = -1;  // time for strftime_now (UTC); -1: the current time
};

class Template {
 public:
  // Parses the whole template up front. Any construct the interpreter does not support is an
  // error here, at load: Status::usage("chat template line N: unsupported <construct>").
  static Result<Template> parse(std::string_view source);

  // Renders. The members of `trusted` and `untrusted` (objects) become the top-level variables
  // (a name in both is an error). Bytes that come from strings reachable from `untrusted` are
  // recorded in MarkedText::literal_spans; everything the template writes itself is markup.
  // raise_exception("msg") gives Status::usage(msg); other errors name the template line.
  // Const and safe to call concurrently.
  Result<tokenizer::MarkedText> render(const nlohmann::ordered_json& trusted,
                                       const nlohmann::ordered_json& untrusted,
                                       const RenderOptions& opts = {}) const;

 private:
  explicit Template(std::shared_ptr<const TemplateAst> ast) : ast_(std::move(ast)) {}
  std::shared_ptr<const TemplateAst> ast_;
};

}  // namespace ridge::chat::jinja
