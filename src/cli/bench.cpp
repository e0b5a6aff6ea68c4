// ridge bench: prompt/decode speed, TTFT and inter-token latency over batch sizes and context
// depths, each point's bytes and FLOPs judged against this machine's probed roof.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "analysis/bench.h"
#include "analysis/probe.h"
#include "analysis/read_pass.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "backend/registry.h"
#include "model/cost.h"

namespace ridge::cli {
namespace {

struct BenchArgs {
  std::string model_path, synthetic, compare_types, isa, kv_type = "f16", svg_path, device = "cpu";
  std::vector<int64_t> batches{1, 2, 4, 8}, contexts{128, 1024};
  int64_t n_decode = 32;
  std::optional<int> n_threads;
  bool json = false, csv = false, no_probe = false, paired_probe = false;
  gguf::Backing backing = gguf::Backing::kHugePages;
};

std::optional<analysis::ProbeResult> get_probe(bool allow_run) {
  if (auto p = analysis::load_probe()) return p;
  if (!allow_run) return std::nullopt;
  fmt::print(stderr, "bench: no cached probe of this CPU; running `ridge probe` (a few seconds)\n");
  auto p = analysis::run_probe(analysis::ProbeOptions{});
  if (!p.ok()) return std::nullopt;
  (void)analysis::save_probe(*p);
  return *p;
}

// Benchmarks one model file over the sweep.
Result<analysis::BenchReport> bench_file(const std::string& path, const std::string& label,
                                         const std::string& type_label, const BenchArgs& a,
                                         const std::optional<analysis::ProbeResult>& probe) {
  auto kernels = pick_kernels(a.isa, a.device);
  if (!kernels.ok()) return kernels.status().with_prefix("bench");
  const kernels::Kernels* k = *kernels;
  RIDGE_ASSIGN_OR_RETURN(model::Model m, model::Model::load(path, *k, a.backing));
  RIDGE_ASSIGN_OR_RETURN(model::TensorTypeFn types, model::weight_types_from_gguf(m.file()));
  const kv::KvType kv = *kv::kv_type_from_name(a.kv_type);  // checked by validate()
  RIDGE_ASSIGN_OR_RETURN(model::ModelCost cost, model::model_cost(m.config(), types, kv));
  const int n_threads = a.n_threads ? *a.n_threads
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(n_threads);
  analysis::BenchReport r;
  r.model = label;
  r.weight_type = type_label;
  r.isa = a.device == "cpu" ? kernels::kernels_label(k->isa) : a.device;
  r.weights_memory = std::string(gguf::backing_name(m.file().backing()));
  r.n_threads = n_threads;
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) r.load_avg = load[0];
  r.weight_read_bytes = cost.weight_read_bytes;
  r.roof.source = "none (run `ridge probe`)";
  if (a.device != "cpu") {  // the GPU's own read pass (its compute peak is not measured yet)
    r.roof = analysis::BenchRoof{};
    auto bw = backend::probe_device(a.device, 0, 1ull << 30, 5);
    if (bw.ok()) {
      r.roof.bandwidth_bytes_per_s = bw->read_gbs * 1e9;
      r.roof.source = fmt::format("ridge probe --device {} ({}, measured now)", a.device, bw->device);
    }
  } else if (probe) {
    r.roof = analysis::roof_from_probe(*probe, types(model::TensorRole::kFfnGate, 0));
  }
  std::optional<analysis::ReadPass> paired;
  if (a.paired_probe) {
    RIDGE_ASSIGN_OR_RETURN(paired, analysis::ReadPass::create(pool));
    r.paired_loop = paired->loop_name();
  }
  analysis::BenchOptions opt;
  opt.backend = a.device;
  opt.n_decode = a.n_decode;
  opt.kv_type = kv;
  for (int64_t c : a.contexts) {
    for (int64_t b : a.batches) {
      RIDGE_ASSIGN_OR_RETURN(analysis::BenchPoint p,
                             analysis::bench_point(m, cost, b, c, opt, r.roof, pool,
                                                   paired ? &*paired : nullptr));
      r.points.push_back(std::move(p));
    }
  }
  return r;
}

// Writes "PRESET:TYPE" to a temporary file, benchmarks it, removes the file.
Result<analysis::BenchReport> bench_synthetic(const std::string& spec, const BenchArgs& a,
                                              const std::optional<analysis::ProbeResult>& probe) {
  const std::string safe = [&] {
    std::string s = spec;
    std::replace(s.begin(), s.end(), ':', '-');
    return s;
  }();
  const std::string path = (std::filesystem::temp_directory_path() /
                            fmt::format("ridge-bench-{}-{}.gguf", safe, getpid())).string();
  Status w = analysis::write_synthetic_model(spec, path, a.n_threads.value_or(2));
  if (!w.ok()) {
    std::filesystem::remove(path);
    return w;
  }
  auto r = bench_file(path, "synthetic " + spec.substr(0, spec.find(':')),
                      spec.substr(spec.find(':') + 1), a, probe);
  std::filesystem::remove(path);
  return r;
}

Status validate(const BenchArgs& a) {
  if (a.model_path.empty() == a.synthetic.empty()) {
    return usage_error("bench: give exactly one of -m FILE.gguf and --synthetic PRESET:TYPE");
  }
  if (!a.compare_types.empty() && a.synthetic.empty()) {
    return usage_error("bench: --compare-types needs --synthetic PRESET:TYPE (the preset is reused)");
  }
  if (auto t = kv::kv_type_from_name(a.kv_type); !t.ok()) return t.status().with_prefix("bench: --kv-type");
  if (a.n_decode < 1 || a.n_decode > 100000) {
    return usage_error("bench: -n must be in 1..100000, got {}", a.n_decode);
  }
  if (a.n_threads && (*a.n_threads < 1 || *a.n_threads > 1024)) {
    return usage_error("bench: -t must be in 1..1024, got {}", *a.n_threads);
  }
  for (int64_t b : a.batches) {
    if (b < 1 || b > 4096) return usage_error("bench: --batch {} is outside 1..4096", b);
  }
  for (int64_t c : a.contexts) {
    if (c < 1 || c > (int64_t{1} << 20)) return usage_error("bench: --ctx {} is outside 1..1048576", c);
  }
  if (a.json && a.csv) return usage_error("bench: --json and --csv are exclusive");
  if (a.paired_probe && a.device != "cpu") {
    return usage_error("bench: --paired-probe reads host memory; with --device {} the GPU's read pass is the roof", a.device);
  }
  return ok_status();
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  CLI::App app("Measure prompt/decode speed, TTFT and latency over batch sizes and contexts, "
               "judged against this machine's roof.", "bench");
  BenchArgs a;
  app.add_option("-m,--model", a.model_path, "GGUF model file");
  app.add_option("--synthetic", a.synthetic, "random-weight model PRESET:TYPE, e.g. qwen3-0.6b:q8_0");
  app.add_option("--batch", a.batches, "concurrent sequences per decode step (list)")
      ->delimiter(',')->capture_default_str();
  app.add_option("--ctx", a.contexts, "prompt tokens per sequence before decoding (list)")
      ->delimiter(',')->capture_default_str();
  app.add_option("-n,--decode", a.n_decode, "decode steps per point")->capture_default_str();
  app.add_option("-t,--threads", a.n_threads, "threads (default: all CPUs)");
  app.add_option("--isa", a.isa, "kernel ISA: ref, avx2, avx512 (default: best; avx512 prefill uses AMX-INT8 where present, RIDGE_AMX=0 turns it off)");
  app.add_option("--kv-type", a.kv_type, "KV cache type: f16, bf16, q8_0 (head_dim % 32 == 0) or f32")->capture_default_str();
  add_device_option(app, a.device);
  app.add_option("--compare-types", a.compare_types,
                 "with --synthetic: two weight types, e.g. q8_0,q4_k_m (speed vs byte ratio)");
  add_mmap_flag(app, a.backing);
  app.add_flag("--json", a.json, "print JSON (schema ridge.bench/1)");
  app.add_flag("--csv", a.csv, "print CSV, one row per point");
  app.add_option("--svg", a.svg_path,
                 "also write charts (tok/s, GB/s, latency, % of roof against batch) to this SVG file");
  app.add_flag("--paired-probe", a.paired_probe,
               "after every timed decode step, read 256 MiB with the probe's best loop on the same "
               "threads, and judge each step against the bandwidth read right after it");
  app.add_flag("--no-probe", a.no_probe, "do not run `ridge probe` when no figures are cached");
  if (auto rc = parse(app, argc, argv)) return *rc;
  if (Status s = validate(a); !s.ok()) return report(s);

  std::ofstream svg_out;  // opened first: an unwritable path fails before the sweep runs
  if (!a.svg_path.empty()) {
    svg_out.open(a.svg_path);
    if (!svg_out) return report(error("bench: {}: cannot write SVG", a.svg_path));
  }
  // The CPU's figures (a device's run measures the GPU instead, in bench_file).
  const auto probe = a.device == "cpu" ? get_probe(!a.no_probe) : std::nullopt;
  std::vector<analysis::BenchReport> reports;
  std::vector<std::string> specs;
  if (!a.model_path.empty()) {
    auto r = bench_file(a.model_path, std::filesystem::path(a.model_path).filename().string(),
                        "file", a, probe);
    if (!r.ok()) return report(r.status());
    reports.push_back(std::move(*r));
  } else if (a.compare_types.empty()) {
    specs.push_back(a.synthetic);
  } else {
    const std::string preset = a.synthetic.substr(0, a.synthetic.find(':'));
    const size_t comma = a.compare_types.find(',');
    if (comma == std::string::npos || a.compare_types.find(',', comma + 1) != std::string::npos) {
      return report(usage_error("bench: --compare-types takes two types, e.g. q8_0,q4_k_m"));
    }
    specs.push_back(preset + ":" + a.compare_types.substr(0, comma));
    specs.push_back(preset + ":" + a.compare_types.substr(comma + 1));
  }
  for (const std::string& spec : specs) {
    auto r = bench_synthetic(spec, a, probe);
    if (!r.ok()) return report(r.status());
    reports.push_back(std::move(*r));
  }
  std::vector<analysis::TypeComparison> cmp;
  if (reports.size() == 2) cmp = analysis::compare_types(reports[0], reports[1]);

  if (a.json) {
    fmt::print("{}\n", analysis::bench_to_json(reports, cmp).dump(2));
  } else if (a.csv) {
    fmt::print("{}", analysis::format_bench_csv(reports));
  } else {
    for (const auto& r : reports) fmt::print("{}\n", analysis::format_bench_table(r));
    if (!cmp.empty()) fmt::print("{}", analysis::format_comparison(reports[0], reports[1], cmp));
  }
  if (!a.svg_path.empty()) {
    svg_out << analysis::bench_svg(reports);
    svg_out.close();
    if (!svg_out) return report(error("bench: {}: cannot write SVG", a.svg_path));
    fmt::print(stderr, "wrote {}\n", a.svg_path);
  }
  bool miscount = false;
  for (const auto& r : reports) {
    for (const auto& p : r.points) miscount = miscount || p.miscount;
  }
  if (miscount) {
    fmt::print(stderr, "ridge: warning: a point ran faster than the roof allows (miscount)\n");
  }
  return 0;
}

}  // namespace ridge::cli
