#include "gguf/value.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace ridge::gguf {

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::kUint8: return "u8";
    case ValueType::kInt8: return "i8";
    case ValueType::kUint16: return "u16";
    case ValueType::kInt16: return "i16";
    case ValueType::kUint32: return "u32";
    case ValueType::kInt32: return "i32";
    case ValueType::kFloat32: return "f32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kUint64: return "u64";
    case ValueType::kInt64: return "i64";
    case ValueType::kFloat64: return "f64";
  }
  return "?";
}

bool Value::is_integer() const {
  switch (type()) {
    case ValueType::kUint8: case ValueType::kInt8: case ValueType::kUint16:
    case ValueType::kInt16: case ValueType::kUint32: case ValueType::kInt32:
    case ValueType::kUint64: case ValueType::kInt64:
      return true;
    default:
      return false;
  }
}

std::optional<int64_t> Value::as_int() const {
  switch (type()) {
    case ValueType::kUint8: return std::get<0>(v);
    case ValueType::kInt8: return std::get<1>(v);
    case ValueType::kUint16: return std::get<2>(v);
    case ValueType::kInt16: return std::get<3>(v);
    case ValueType::kUint32: return std::get<4>(v);
    case ValueType::kInt32: return std::get<5>(v);
    case ValueType::kUint64: {
      uint64_t u = std::get<10>(v);
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(u);
    }
    case ValueType::kInt64: return std::get<11>(v);
    default: return std::nullopt;
  }
}

std::optional<uint64_t> Value::as_uint() const {
  if (type() == ValueType::kUint64) return std::get<10>(v);
  auto i = as_int();
  if (!i || *i < 0) return std::nullopt;
  return static_cast<uint64_t>(*i);
}

std::optional<double> Value::as_double() const {
  if (type() == ValueType::kFloat32) return std::get<6>(v);
  if (type() == ValueType::kFloat64) return std::get<12>(v);
  if (type() == ValueType::kUint64) return static_cast<double>(std::get<10>(v));
  if (auto i = as_int()) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
  if (type() == ValueType::kBool) return std::get<7>(v);
  return std::nullopt;
}

const std::string* Value::as_string() const { return std::get_if<std::string>(&v); }
const ArrayValue* Value::as_array() const { return std::get_if<ArrayValue>(&v); }

std::string Value::to_display(size_t max_items) const {
  if (const auto* s = as_string()) {
    std::string out = "\"";
    size_t n = 0;
    for (char c : *s) {
      if (++n > 120) {
        out += "...";
        break;
      }
      if (c == '\n') out += "\\n";
      else if (c == '"') out += "\\\"";
      else out += c;
    }
    return out + "\"";
  }
  if (const auto* a = as_array()) {
    std::string out = fmt::format("[{} x {}: ", a->items.size(), value_type_name(a->elem_type));
    for (size_t i = 0; i < a->items.size() && i < max_items; ++i) {
      if (i) out += ", ";
      out += a->items[i].to_display(max_items);
    }
    if (a->items.size() > max_items) out += ", ...";
    return out + "]";
  }
  if (auto b = as_bool()) return *b ? "true" : "false";
  if (type() == ValueType::kFloat32 || type() == ValueType::kFloat64) {
    return fmt::format("{}", *as_double());
  }
  if (type() == ValueType::kUint64) return fmt::format("{}", std::get<10>(v));
  if (auto i = as_int()) return fmt::format("{}", *i);
  return "?";
}

namespace {

// An array of one element type, each item made by `make`.
template <typename Items, typename Make>
Value make_array(ValueType elem_type, const Items& items, Make make) {
  ArrayValue a;
  a.elem_type = elem_type;
  a.items.reserve(items.size());
  for (const auto& x : items) a.items.push_back(make(x));
  return Value{ValueStorage(std::in_place_index<9>, std::move(a))};
}

}  // namespace

Value make_string_array(const std::vector<std::string>& items) {
  return make_array(ValueType::kString, items, [](const std::string& x) { return make_string(x); });
}

Value make_f32_array(const std::vector<float>& items) {
  return make_array(ValueType::kFloat32, items, make_f32);
}

Value make_i32_array(const std::vector<int32_t>& items) {
  return make_array(ValueType::kInt32, items, make_i32);
}

Value make_bool_array(const std::vector<bool>& items) {
  return make_array(ValueType::kBool, items, [](bool x) { return make_bool(x); });
}

}  // namespace ridge::gguf
