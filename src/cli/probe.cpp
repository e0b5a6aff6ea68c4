// `ridge probe`: measure this machine's memory bandwidth and peak arithmetic (cached per CPU).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/probe.h"
#include "backend/registry.h"
#include "cli/commands.h"
#include "cli/common.h"

namespace ridge::cli {

namespace {

// A device backend's own figures (read and copy bandwidth, measured now, not cached).
int print_device_probe(const std::string& device, uint64_t bytes, int reps, bool as_json) {
  if (Status s = pick_kernels("", device).status(); !s.ok()) return report(s);
  auto bw = backend::probe_device(device, 0, bytes, reps);
  if (!bw.ok()) return report(bw.status().with_prefix("probe --device " + device));
  if (as_json) {
    const nlohmann::json j = {{"device", bw->device}, {"read_gbs", bw->read_gbs}, {"copy_gbs", bw->copy_gbs},
                              {"buffer_bytes", bw->buffer_bytes}, {"repetitions", bw->repetitions}};
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("{}: read {:.1f} GB/s, copy {:.1f} GB/s (bytes read + written) · {} MiB buffer, median of {}\n",
             bw->device, bw->read_gbs, bw->copy_gbs, bw->buffer_bytes >> 20, bw->repetitions);
  return 0;
}

}  // namespace

int cmd_probe(int argc, char** argv) {
  CLI::App app("Measure memory read/copy bandwidth (1..N threads) and peak f32/int8/bf16 rates; "
               "cached per CPU model in $XDG_CACHE_HOME/ridge/probe.json",
               "ridge probe");
  bool force = false, json = false;
  analysis::ProbeOptions opt;
  uint64_t size_mib = opt.buffer_bytes >> 20;
  app.add_flag("--force", force, "re-measure even when figures for this CPU are cached");
  app.add_flag("--json", json, "print the figures as JSON");
  app.add_option("--threads", opt.max_threads, "most threads to measure (default: every CPU)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--size-mib", size_mib, "buffer size in MiB (default 512)")->check(CLI::Range(1, 1 << 20));
  app.add_option("--reps", opt.repetitions, "timed passes per loop variant, median kept (default 5)")
      ->check(CLI::Range(1, 100));
  app.add_option("--isa", opt.isa, "force the loops: avx512, avx2, generic");
  std::string device = "cpu";
  add_device_option(app, device);
  if (auto rc = parse(app, argc, argv)) return *rc;
  opt.buffer_bytes = size_mib << 20;
  if (device != "cpu") return print_device_probe(device, opt.buffer_bytes, opt.repetitions, json);

  std::optional<analysis::ProbeResult> result;
  bool cached = false;
  if (!force) {
    result = analysis::load_probe();
    cached = result.has_value();
  }
  if (!result) {
    if (!json) fmt::print(stderr, "measuring (a few seconds; keep the machine otherwise idle)...\n");
    auto r = analysis::run_probe(opt);
    if (!r.ok()) return report(r.status());
    result = std::move(r).value();
    Status saved = analysis::save_probe(*result);
    if (!saved.ok()) fmt::print(stderr, "ridge: warning: {}\n", saved.message());
  }
  if (json) {
    fmt::print("{}\n", analysis::probe_to_json(*result).dump(2));
    return 0;
  }
  fmt::print("{}", analysis::format_probe(*result));
  fmt::print("{} {}\n", cached ? "cached in" : "saved to", analysis::probe_cache_path());
  if (cached) fmt::print("(ridge probe --force re-measures)\n");
  return 0;
}

}  // namespace ridge::cli
