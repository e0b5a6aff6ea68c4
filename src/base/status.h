// Status and Result<T>: how every function that reads untrusted input reports failure.
// A failed Status carries one line naming what, where and why, and whether it is a usage error
// (CLI exit 2) or a runtime error (exit 1). No exceptions cross module boundaries.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "base/check.h"

namespace ridge {

class [[nodiscard]] Status {
 public:
  enum class Kind { kOk, kRuntime, kUsage };

  Status() = default;  // ok
  static Status runtime(std::string message) { return Status(Kind::kRuntime, std::move(message)); }
  static Status usage(std::string message) { return Status(Kind::kUsage, std::move(message)); }

  bool ok() const { return kind_ == Kind::kOk; }
  bool is_usage() const { return kind_ == Kind::kUsage; }
  Kind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  // Exit code for the CLI: 0 ok, 1 runtime error, 2 usage error.
  int exit_code() const { return ok() ? 0 : (is_usage() ? 2 : 1); }
  // Same kind, message "prefix: message".
  Status with_prefix(std::string_view prefix) const {
    if (ok()) return *this;
    return Status(kind_, fmt::format("{}: {}", prefix, message_));
  }

 private:
  Status(Kind kind, std::string message) : kind_(kind), message_(std::move(message)) {}
  Kind kind_ = Kind::kOk;
  std::string message_;
};

inline Status ok_status() { return Status(); }

// Formatted constructors: error("{}: tensor '{}' ...", path, name).
template <typename... Args>
Status error(fmt::format_string<Args...> f, Args&&... args) {
  return Status::runtime(fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status usage_error(fmt::format_string<Args...> f, Args&&... args) {
  return Status::usage(fmt::format(f, std::forward<Args>(args)...));
}

// A value or a failed Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    RIDGE_CHECK(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { RIDGE_CHECK(ok()); return std::get<T>(v_); }
  const T& value() const& { RIDGE_CHECK(ok()); return std::get<T>(v_); }
  T&& value() && { RIDGE_CHECK(ok()); return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T value_or(T fallback) const& { return ok() ? std::get<T>(v_) : std::move(fallback); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ridge

#define RIDGE_CONCAT_INNER_(a, b) a##b
#define RIDGE_CONCAT_(a, b) RIDGE_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` (a Status) failed.
#define RIDGE_RETURN_IF_ERROR(expr)                 \
  do {                                              \
    ::ridge::Status ridge_status_ = (expr);         \
    if (!ridge_status_.ok()) return ridge_status_;  \
  } while (0)

// `RIDGE_ASSIGN_OR_RETURN(auto x, f());` declares x from a Result or returns its Status.
#define RIDGE_ASSIGN_OR_RETURN(lhs, expr) \
  RIDGE_ASSIGN_OR_RETURN_IMPL_(RIDGE_CONCAT_(ridge_result_, __LINE__), lhs, expr)
#define RIDGE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
