// Pieces of the JSON Schema converter shared between its files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "grammar/grammar.h"

namespace ridge::grammar::detail {

using grammar::gbnf_literal;
// A GBNF expression for one character of a JSON string whose decoded value is cp (raw when
// JSON allows it, escaped otherwise).
std::string json_char_expr(uint32_t cp);
// A GBNF expression for one JSON string character whose decoded value lies in the given sorted,
// disjoint code point ranges. Control characters other than \t \n \r and \f are left out.
std::string json_class_expr(const std::vector<std::pair<uint32_t, uint32_t>>& ranges);
// The same two for plain text (no JSON escaping): one character cp, or one character of the
// ranges (surrogates left out).
std::string text_char_expr(uint32_t cp);
std::string text_class_expr(const std::vector<std::pair<uint32_t, uint32_t>>& ranges);

// The shared rules: "j-ws", "j-value", "j-object", "j-array", "j-string", "j-char", "j-number",
// "j-integer", "j-boolean", "j-null", "j-hex", "j-date", "j-time", "j-date-time", "j-uuid".
// Returns the body of `name` and appends the primitive rules it refers to onto deps.
std::string primitive_body(std::string_view name, std::vector<std::string>* deps);

// Integers in [lo, hi] as a GBNF expression (decimal, no leading zeros).
std::string integer_range_expr(int64_t lo, int64_t hi);
constexpr int64_t kMaxIntegerMagnitude = 999999999999999999;  // 18 digits

// A JSON string (with quotes) that is none of `keys`. add_rule(body) defines a rule and returns
// its name.
std::string string_not_in_expr(const std::vector<std::string>& keys,
                               const std::function<std::string(std::string)>& add_rule);

// A regular expression (the subset in docs/grammar.md) as a GBNF expression. kJsonString: over
// the inside of a JSON string (between the quotes), searched unless anchored, as JSON Schema's
// `pattern`. kText: over plain text, which must match the whole pattern. Errors are one line
// without prefix.
enum class RegexTarget { kJsonString, kText };
Result<std::string> regex_to_gbnf(std::string_view pattern,
                                  RegexTarget target = RegexTarget::kJsonString);

// UTF-8 text -> code points; false if invalid.
bool decode_utf8(std::string_view s, std::vector<uint32_t>* out);

}  // namespace ridge::grammar::detail
