#include "cli/hf_option.h"

#include "hub/pull.h"

namespace ridge::cli {

Result<std::vector<std::string>> expand_hf_option(std::string_view command, int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    const std::string_view a = argv[i];
    std::string value;
    if (a == "-hf" || a == "--hf-repo") {
      if (i + 1 >= argc) return usage_error("{}: {} needs USER/REPO[:QUANT]", command, a);
      value = argv[++i];
    } else if (a.rfind("--hf-repo=", 0) == 0 || a.rfind("-hf=", 0) == 0) {
      value = std::string(a.substr(a.find('=') + 1));
    } else {
      out.emplace_back(a);
      continue;
    }
    RIDGE_ASSIGN_OR_RETURN(const hub::RepoRef ref, hub::parse_repo_ref(value));
    auto path = hub::pull(hub::hub_config_from_env(), ref);
    if (!path.ok()) return path.status().with_prefix(fmt::format("{}: -hf {}", command, value));
    if (command != "inspect") out.emplace_back("-m");
    out.push_back(*path);
  }
  return out;
}

}  // namespace ridge::cli
