#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace ridge {
void check_failed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "ridge: internal error: CHECK(%s) failed at %s:%d\n", condition, file, line);
  std::abort();
}
}  // namespace ridge
