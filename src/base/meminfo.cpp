#include "base/meminfo.h"

#include <fstream>
#include <string>

namespace ridge {

uint64_t meminfo_bytes(std::string_view key) {
  std::ifstream in("/proc/meminfo");
  std::string name, unit;
  uint64_t kb = 0;
  while (in >> name >> kb) {
    if (name.size() == key.size() + 1 && name.back() == ':' && std::string_view(name).substr(0, key.size()) == key) {
      return kb * 1024;
    }
    std::getline(in, unit);  // the rest of the line ("kB", or nothing)
  }
  return 0;
}

}  // namespace ridge
