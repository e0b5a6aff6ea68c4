// Typed metadata getters of gguf::File.
#include <limits>

#include "gguf/reader.h"

namespace ridge::gguf {
namespace {

Status missing(const File& f, std::string_view key) {
  return error("{}: missing metadata key '{}'", f.path(), key);
}
Status wrong_type(const File& f, std::string_view key, const Value& v, std::string_view want) {
  return error("{}: metadata '{}' is {} (expected {})", f.path(), key, value_type_name(v.type()), want);
}

template <typename T, typename Conv>
Result<std::vector<T>> get_array(const File& f, std::string_view key, std::string_view want, Conv conv) {
  const Value* v = f.find(key);
  if (!v) return missing(f, key);
  const ArrayValue* a = v->as_array();
  if (!a) return wrong_type(f, key, *v, want);
  std::vector<T> out;
  out.reserve(a->items.size());
  for (size_t i = 0; i < a->items.size(); ++i) {
    auto x = conv(a->items[i]);
    if (!x) {
      return error("{}: metadata '{}' item {} is {} (expected {})", f.path(), key, i,
                   value_type_name(a->items[i].type()), want);
    }
    out.push_back(static_cast<T>(*x));
  }
  return out;
}

}  // namespace

Result<int64_t> File::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(*this, key);
  auto x = v->as_int();
  if (!x) return wrong_type(*this, key, *v, "an integer");
  return *x;
}

Result<uint64_t> File::get_uint(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(*this, key);
  auto x = v->as_uint();
  if (!x) return wrong_type(*this, key, *v, "a non-negative integer");
  return *x;
}

Result<double> File::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(*this, key);
  auto x = v->as_double();
  if (!x) return wrong_type(*this, key, *v, "a number");
  return *x;
}

Result<bool> File::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(*this, key);
  auto x = v->as_bool();
  if (!x) return wrong_type(*this, key, *v, "a bool");
  return *x;
}

Result<std::string> File::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(*this, key);
  const std::string* s = v->as_string();
  if (!s) return wrong_type(*this, key, *v, "a string");
  return *s;
}

Result<std::vector<std::string>> File::get_string_array(std::string_view key) const {
  return get_array<std::string>(*this, key, "an array of strings", [](const Value& x) -> std::optional<std::string> {
    const std::string* s = x.as_string();
    return s ? std::optional<std::string>(*s) : std::nullopt;
  });
}

Result<std::vector<float>> File::get_float_array(std::string_view key) const {
  return get_array<float>(*this, key, "an array of numbers", [](const Value& x) { return x.as_double(); });
}

Result<std::vector<int64_t>> File::get_int_array(std::string_view key) const {
  return get_array<int64_t>(*this, key, "an array of integers", [](const Value& x) { return x.as_int(); });
}

Result<std::vector<bool>> File::get_bool_array(std::string_view key) const {
  return get_array<bool>(*this, key, "an array of bools", [](const Value& x) { return x.as_bool(); });
}

Result<int64_t> File::get_int_or(std::string_view key, int64_t fallback) const {
  return has(key) ? get_int(key) : Result<int64_t>(fallback);
}
Result<double> File::get_float_or(std::string_view key, double fallback) const {
  return has(key) ? get_float(key) : Result<double>(fallback);
}
Result<bool> File::get_bool_or(std::string_view key, bool fallback) const {
  return has(key) ? get_bool(key) : Result<bool>(fallback);
}
Result<std::string> File::get_string_or(std::string_view key, std::string fallback) const {
  return has(key) ? get_string(key) : Result<std::string>(std::move(fallback));
}

}  // namespace ridge::gguf
