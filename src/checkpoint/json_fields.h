// Fields of a Hugging Face JSON file read without trusting its shape: a missing key, a field of
// another type or a value that is not an object gives the fallback or a one-line error, never
// nlohmann's exception (these files come from wherever the user found the folder).
#pragma once

#include <nlohmann/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace ridge::checkpoint {

inline std::string string_field(const nlohmann::json& j, const char* key, const std::string& fallback = "") {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return fallback;
  return j[key].get<std::string>();
}

inline bool bool_field(const nlohmann::json& j, const char* key, bool fallback) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_boolean()) return fallback;
  return j[key].get<bool>();
}

// config.json's integer field `key`: positive (at most 2^31); missing or null gives `fallback`,
// or an error when fallback < 0.
inline Result<int64_t> config_positive(const nlohmann::json& j, const char* key, int64_t fallback = -1) {
  if (!j.contains(key) || j[key].is_null()) {
    if (fallback >= 0) return fallback;
    return error("config.json: missing '{}'", key);
  }
  if (!j[key].is_number_integer() || j[key].get<int64_t>() <= 0 || j[key].get<int64_t>() > (int64_t{1} << 31)) {
    return error("config.json: '{}' must be a positive integer", key);
  }
  return j[key].get<int64_t>();
}

// config.json's number field `key` (missing or null: fallback).
inline Result<double> config_number(const nlohmann::json& j, const char* key, double fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_number()) return error("config.json: '{}' must be a number", key);
  return j[key].get<double>();
}

// llama.cpp's token types.
inline constexpr int32_t kTokenNormal = 1, kTokenControl = 3, kTokenUserDefined = 4, kTokenUnused = 5;

// tokenizer.json's added tokens: id, text, and type (control when special, else user-defined);
// an entry without an integer id >= 0 and a text is an error.
struct AddedToken {
  int64_t id = 0;
  std::string text;
  int32_t type = kTokenUserDefined;
};
inline Result<std::vector<AddedToken>> added_tokens_of(const nlohmann::json& tok) {
  std::vector<AddedToken> out;
  if (!tok.is_object() || !tok.contains("added_tokens") || !tok["added_tokens"].is_array()) return out;
  for (const nlohmann::json& a : tok["added_tokens"]) {
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || a["id"].get<int64_t>() < 0 ||
        !a.contains("content") || !a["content"].is_string()) {
      return error("tokenizer.json: an added token without an id and content");
    }
    out.push_back({a["id"].get<int64_t>(), a["content"].get<std::string>(),
                   bool_field(a, "special", false) ? kTokenControl : kTokenUserDefined});
  }
  return out;
}

}  // namespace ridge::checkpoint
