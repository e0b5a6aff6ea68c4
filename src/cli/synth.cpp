#include "cli/commands.h"
#include "cli/common.h"

namespace ridge::cli {
int cmd_synth(int, char**) { return report(Status::runtime("synth: not implemented yet")); }
}  // namespace ridge::cli
