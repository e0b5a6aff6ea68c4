// Fields of /proc/meminfo.
#pragma once

#include <cstdint>
#include <string_view>

namespace ridge {

// The value of `key` ("MemAvailable", "MemTotal", ...) in bytes; 0 when unknown.
uint64_t meminfo_bytes(std::string_view key);

}  // namespace ridge
