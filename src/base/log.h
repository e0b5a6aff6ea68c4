// Messages to stderr. Errors that end a command go through Status instead.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <utility>

namespace ridge {

template <typename... Args>
void log_warn(fmt::format_string<Args...> f, Args&&... args) {
  fmt::print(stderr, "ridge: warning: {}\n", fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
void log_info(fmt::format_string<Args...> f, Args&&... args) {
  fmt::print(stderr, "{}\n", fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace ridge
