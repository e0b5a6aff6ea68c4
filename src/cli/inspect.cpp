#include "cli/commands.h"
#include "cli/common.h"

namespace ridge::cli {
int cmd_inspect(int, char**) { return report(Status::runtime("inspect: not implemented yet")); }
}  // namespace ridge::cli
