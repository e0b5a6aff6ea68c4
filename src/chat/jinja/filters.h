// Jinja filters and tests ("is ..."), looked up by name when parsing.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat/jinja/value.h"

namespace ridge::chat::jinja {

class Renderer;

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // The argument at `index` or named `name`, or nullptr.
  const Value* get(size_t index, std::string_view name) const;
};

int find_filter(std::string_view name);  // -1 if unknown
int find_test(std::string_view name);    // -1 if unknown

Result<Value> apply_filter(Renderer& r, int id, const Value& input, const CallArgs& args);
Result<bool> apply_test(Renderer& r, int id, const Value& input, const CallArgs& args);
// A filter or test by name at runtime (map('upper'), select('equalto', x), ...).
Result<Value> apply_filter_named(Renderer& r, std::string_view name, const Value& input,
                                 const CallArgs& args);
Result<bool> apply_test_named(Renderer& r, std::string_view name, const Value& input,
                              const CallArgs& args);

}  // namespace ridge::chat::jinja
