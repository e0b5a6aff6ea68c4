// GGUF metadata values: every value type of the format, including nested arrays.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ridge::gguf {

// On-disk value type ids (GGUF v2/v3).
enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
inline constexpr uint32_t kValueTypeCount = 13;

std::string_view value_type_name(ValueType type);

struct Value;
struct ArrayValue {
  ValueType elem_type = ValueType::kUint8;
  std::vector<Value> items;
};

// The variant's alternative index equals the ValueType id.
using ValueStorage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                                  std::string, ArrayValue, uint64_t, int64_t, double>;

struct Value {
  ValueStorage v;

  ValueType type() const { return static_cast<ValueType>(v.index()); }
  bool is_integer() const;
  // Conversions; nullopt when the type does not fit (an integer out of range, a string as a
  // number, ...). as_int/as_uint accept every integer type; as_double accepts integers and floats.
  std::optional<int64_t> as_int() const;
  std::optional<uint64_t> as_uint() const;
  std::optional<double> as_double() const;
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;
  const ArrayValue* as_array() const;
  // Human-readable rendering for `ridge inspect`; arrays longer than max_items are elided.
  std::string to_display(size_t max_items = 8) const;
};

// Convenience constructors.
inline Value make_u32(uint32_t x) { return Value{ValueStorage(std::in_place_index<4>, x)}; }
inline Value make_i32(int32_t x) { return Value{ValueStorage(std::in_place_index<5>, x)}; }
inline Value make_f32(float x) { return Value{ValueStorage(std::in_place_index<6>, x)}; }
inline Value make_bool(bool x) { return Value{ValueStorage(std::in_place_index<7>, x)}; }
inline Value make_string(std::string x) {
  return Value{ValueStorage(std::in_place_index<8>, std::move(x))};
}
inline Value make_u64(uint64_t x) { return Value{ValueStorage(std::in_place_index<10>, x)}; }
Value make_string_array(const std::vector<std::string>& items);
Value make_f32_array(const std::vector<float>& items);
Value make_i32_array(const std::vector<int32_t>& items);
Value make_bool_array(const std::vector<bool>& items);

}  // namespace ridge::gguf
