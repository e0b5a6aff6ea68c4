// -hf USER/REPO[:QUANT] on every command that takes a model: the model is pulled into the cache
// (hub/pull.h) and the option becomes -m PATH (inspect: the PATH argument) before the command
// parses its arguments.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ridge::cli {

// argv (argv[0] the command) with every -hf / --hf-repo VALUE (or =VALUE) replaced; unchanged
// when there is none.
Result<std::vector<std::string>> expand_hf_option(std::string_view command, int argc, char** argv);

}  // namespace ridge::cli
