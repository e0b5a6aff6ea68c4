#include "cli/common.h"

#include <fmt/format.h>

#include <cstdio>

namespace ridge::cli {

int report(const Status& status) {
  if (status.ok()) return 0;
  fmt::print(stderr, "ridge: error: {}\n", status.message());
  return status.exit_code();
}

std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    fmt::print("{}", app.help("", CLI::AppFormatMode::All));
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    for (char& c : what) {
      if (c == '\n') c = ' ';
    }
    return report(Status::usage(fmt::format("{} {}: {} (see --help)", "ridge", app.get_name(), what)));
  }
  return std::nullopt;
}

}  // namespace ridge::cli
