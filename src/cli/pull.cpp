// ridge pull: a GGUF model from the Hugging Face hub into the local cache.
#include <fmt/format.h>

#include <regex>

#include "cli/commands.h"
#include "cli/common.h"
#include "hub/pull.h"

namespace ridge::cli {

int cmd_pull(int argc, char** argv) {
  CLI::App app(
      "Download a GGUF model from the Hugging Face hub into the cache (RIDGE_MODELS, default "
      "~/.cache/ridge/models) and print its path. USER/REPO[:QUANT] picks the file whose name carries "
      "QUANT (default Q4_K_M, else the repository's only model), with every part of a split file. "
      "Interrupted downloads resume; each file is checked against the sha256 the hub lists. HF_TOKEN "
      "is sent for gated or private repositories, HF_ENDPOINT replaces https://huggingface.co. Every "
      "command that takes -m also takes -hf USER/REPO[:QUANT].",
      "pull");
  std::string spec, revision = "main";
  bool list = false, quiet = false;
  app.add_option("repo", spec, "USER/REPO[:QUANT]");
  app.add_option("--revision", revision, "branch, tag or commit (default main)");
  app.add_flag("--list", list, "list the models in the cache");
  app.add_flag("-q,--quiet", quiet, "no progress on stderr");
  if (auto rc = parse(app, argc, argv)) return *rc;
  hub::HubConfig cfg = hub::hub_config_from_env();
  cfg.progress = !quiet;
  if (list) {
    for (const auto& f : hub::list_cached(cfg)) fmt::print("{:>10.1f} MB  {}\n", static_cast<double>(f.size) / 1e6, f.name);
    return 0;
  }
  if (spec.empty()) return report(usage_error("pull: give USER/REPO[:QUANT] or --list"));
  static const std::regex kRevision(R"([A-Za-z0-9][A-Za-z0-9._/-]*)");
  if (!std::regex_match(revision, kRevision) || revision.find("..") != std::string::npos) {
    return report(usage_error("pull: --revision '{}' is not a branch, tag or commit name", revision));
  }
  auto ref = hub::parse_repo_ref(spec);
  if (!ref.ok()) return report(ref.status());
  auto path = hub::pull(cfg, *ref, revision);
  if (!path.ok()) return report(path.status().with_prefix("pull"));
  fmt::print("{}\n", *path);
  return 0;
}

}  // namespace ridge::cli
