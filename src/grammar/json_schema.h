// JSON Schema -> GBNF for structured outputs (docs/grammar.md lists the supported subset).
// Anything outside it is refused with a usage error naming the keyword and its JSON pointer,
// e.g. "json_schema: /properties/x: unsupported keyword 'patternProperties'".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace ridge::grammar {

// nlohmann::json keeps object keys sorted, so properties are generated in key order.
Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema);
// The same from a schema parsed as nlohmann::ordered_json: properties are generated in the order
// the schema lists them (what clients expect; parse request bodies with ordered_json for this).
Result<std::string> json_schema_to_gbnf_ordered(const nlohmann::ordered_json& schema);
// response_format {type: "json_object"}: any JSON object.
std::string any_json_object_gbnf();
// A regular expression (the `pattern` subset in docs/grammar.md) the whole text must match, as a
// grammar whose start rule is "root".
Result<std::string> regex_to_gbnf(std::string_view pattern);

}  // namespace ridge::grammar
