// Fields of a Hugging Face JSON file read without trusting its shape: a missing key, a field of
// another type or a value that is not an object gives the fallback, never nlohmann's exception
// (these files come from wherever the user found the folder).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ridge::checkpoint {

inline std::string string_field(const nlohmann::json& j, const char* key, const std::string& fallback = "") {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return fallback;
  return j[key].get<std::string>();
}

inline bool bool_field(const nlohmann::json& j, const char* key, bool fallback) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_boolean()) return fallback;
  return j[key].get<bool>();
}

}  // namespace ridge::checkpoint
