// The JSON Schema converter's state; its methods live in json_schema.cpp (dispatch, $ref, allOf,
// enum) and json_schema_types.cpp (one method per type).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace ridge::grammar::detail {

bool is_annotation(std::string_view keyword);
std::string pointer_escape(std::string_view key);

// J is nlohmann::json (object keys sorted) or nlohmann::ordered_json (keys in document order,
// so properties are generated in the order the schema lists them).
template <class J>
class Converter {
 public:
  using json = J;
  static constexpr int kMaxDepth = 64;
  static constexpr int64_t kMaxLength = 5000;  // maxLength and property-name length bound
  static constexpr int64_t kMaxItems = 1000;
  explicit Converter(const json& root) : root_(root) {}

  Result<std::string> run();
  // The grammar text with `top` as the root expression.
  std::string text(const std::string& top) const;

  std::string prim(const std::string& name);

 private:
  Status err(const std::string& ptr, std::string_view what) const;
  std::string add_rule(std::string body);
  std::string alternation(const std::vector<std::string>& alts);
  // The first keyword of s that constrains values, other than those in `allowed`.
  static std::string other_keyword(const json& s, std::initializer_list<std::string_view> allowed);

  Result<std::string> visit(const json& s, const std::string& ptr, int depth);
  Result<std::string> visit_ref(const json& ref, const std::string& ptr, int depth);
  Result<std::string> visit_all_of(const json& s, const std::string& ptr, int depth);
  Result<std::string> visit_literals(const json& s, const std::string& ptr);
  Result<std::string> visit_typed(const json& s, const std::string& type, const std::string& ptr,
                                  int depth);
  Result<std::string> visit_integer(const json& s, const std::string& ptr);
  Result<std::string> visit_string(const json& s, const std::string& ptr);
  Result<std::string> visit_object(const json& s, const std::string& ptr, int depth);
  Result<std::string> visit_array(const json& s, const std::string& ptr, int depth);
  Result<int64_t> count(const json& s, const char* key, const std::string& ptr, int64_t fallback,
                        int64_t max);

  const json& root_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::set<std::string> defined_;
  std::map<std::string, std::string> refs_;  // $ref -> rule name
};

}  // namespace ridge::grammar::detail
