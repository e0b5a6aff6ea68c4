#include "server/json_fields.h"

#include <fmt/format.h>

namespace ridge::server {

using json = nlohmann::ordered_json;

const char* json_type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "a number";
  }
}

ApiError wrong_type(const std::string& field, const json& v, std::string_view want) {
  return invalid_param(field, fmt::format("'{}' must be {}, got {}", field, want,
                                          json_type_name(v)));
}

const json* json_field(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

}  // namespace ridge::server
