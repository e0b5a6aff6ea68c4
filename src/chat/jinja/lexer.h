// Splits template source into text, {{ print }} and {% statement %} segments, applying jinja2's
// whitespace control (trim_blocks, lstrip_blocks, "-" and "+" markers), and tokenizes the
// expressions inside tags.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ridge::chat::jinja {

struct Token {
  enum class Type { kName, kString, kInt, kFloat, kOp, kEnd };

  Type type = Type::kEnd;
  std::string text;  // name, operator, or the unescaped string value
  int64_t ival = 0;
  double fval = 0;
  int line = 0;
};

// "end of tag", "string", "number" or the quoted text, for error messages.
std::string describe_token(const Token& t);

struct Segment {
  enum class Type { kText, kPrint, kStatement };
  Type type = Type::kText;
  std::string text;           // kText
  std::vector<Token> tokens;  // kPrint / kStatement, ending with a kEnd token
  int line = 0;
};

Result<std::vector<Segment>> lex_template(std::string_view source);

// "chat template line N: msg" as a usage error.
Status template_error(int line, std::string_view msg);

}  // namespace ridge::chat::jinja
