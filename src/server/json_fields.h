// Small helpers the request parsers share: reading an optional field and naming a wrong type.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "server/api_error.h"

namespace ridge::server {

// "a string", "an object", ... for error messages.
const char* json_type_name(const nlohmann::ordered_json& v);
// 400: "'<field>' must be <want>, got <type>".
ApiError wrong_type(const std::string& field, const nlohmann::ordered_json& v,
                    std::string_view want);
// The field's value, or nullptr when absent or null (OpenAI treats null as "not given").
const nlohmann::ordered_json* json_field(const nlohmann::ordered_json& body, const char* key);

}  // namespace ridge::server
