// Python's str(), repr() and json.dumps() of values, byte for byte as CPython prints them.
#pragma once

#include <string>

#include "base/status.h"
#include "chat/jinja/tstring.h"
#include "chat/jinja/value.h"

namespace ridge::chat::jinja {

// repr(float): shortest round-trip digits, exponent form outside 1e-4 <= |x| < 1e16.
std::string py_float_repr(double d);
// repr(str): quotes and escapes as CPython chooses them.
std::string py_str_repr(std::string_view s);
// str(v): a string keeps its spans; any other value is literal as a whole if it holds a
// tainted string. Undefined prints as "".
Result<TString> py_str(const Value& v);
Result<std::string> py_repr(const Value& v, int depth = 0);

struct JsonOptions {
  bool ensure_ascii = false;
  bool has_indent = false;
  std::string indent;  // used when has_indent
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  bool sort_keys = false;
};
// json.dumps(v, ...): errors for values JSON cannot hold (Undefined, namespaces, ...).
Result<std::string> py_json(const Value& v, const JsonOptions& opts);

}  // namespace ridge::chat::jinja
