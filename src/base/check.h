// Internal invariants. A CHECK failure is a bug in ridge; no input may reach one.
#pragma once

namespace ridge {
[[noreturn]] void check_failed(const char* condition, const char* file, int line);
}  // namespace ridge

#define RIDGE_CHECK(cond)                                                    \
  do {                                                                       \
    if (!(cond)) [[unlikely]] ::ridge::check_failed(#cond, __FILE__, __LINE__); \
  } while (0)
