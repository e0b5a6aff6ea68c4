// Probe results: JSON form, the per-CPU cache file, and the text report.
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "analysis/probe.h"
#include "base/cpu_features.h"

namespace ridge::analysis {
namespace {

constexpr int kSchema = 1;
// Version of the measurement itself. 2: best of several read/copy loop variants, median of
// passes (1 measured one plain loop and read low). 3: read variants that also prefetch into L1,
// as the decode kernels do. 4: that variant 4 KiB ahead into L1, as the kernels now are.
// Entries of older versions are not loaded: the next command that needs the figures re-measures.
constexpr int kProbeVersion = 4;

nlohmann::json loops_json(const std::vector<LoopSample>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& l : v) a.push_back({{"loop", l.loop}, {"gbs", l.gbs}});
  return a;
}

std::vector<LoopSample> loops_from_json(const nlohmann::json& j, const char* key) {
  std::vector<LoopSample> out;
  for (const auto& l : j.value(key, nlohmann::json::array())) {
    out.push_back({l.at("loop").get<std::string>(), l.at("gbs").get<double>()});
  }
  return out;
}

nlohmann::json read_cache(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::object();
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("machines") || !j["machines"].is_array()) {
    return nlohmann::json::object();  // a damaged cache is re-measured, not an error
  }
  return j;
}

bool same_machine(const nlohmann::json& e, const std::string& cpu_model, int n_cpus) {
  return e.is_object() && e.value("cpu_model", std::string("\x01")) == cpu_model &&
         e.value("n_cpus", -1) == n_cpus;
}

}  // namespace

nlohmann::json probe_to_json(const ProbeResult& r) {
  nlohmann::json bw = nlohmann::json::array();
  for (const auto& s : r.bandwidth) {
    bw.push_back({{"threads", s.n_threads}, {"read_gbs", s.read_gbs}, {"copy_gbs", s.copy_gbs},
                  {"read_loop", s.read_loop}, {"copy_loop", s.copy_loop}});
  }
  return {{"cpu_model", r.cpu_model},       {"n_cpus", r.n_cpus},
          {"isa", r.isa},                   {"threads", r.n_threads},
          {"buffer_bytes", r.buffer_bytes}, {"repetitions", r.repetitions},
          {"bandwidth", bw},                {"read_gbs", r.read_gbs},
          {"copy_gbs", r.copy_gbs},         {"f32_gflops_1t", r.f32_gflops_1t},
          {"f32_gflops", r.f32_gflops},     {"int8_gops_1t", r.int8_gops_1t},
          {"int8_gops", r.int8_gops},       {"bf16_gflops_1t", r.bf16_gflops_1t},
          {"bf16_gflops", r.bf16_gflops},   {"memory_gb", r.memory_gb},
          {"measured_at", r.measured_at},   {"seconds", r.seconds},
          {"load_avg", r.load_avg},         {"probe_version", kProbeVersion},
          {"read_loop", r.read_loop},       {"copy_loop", r.copy_loop},
          {"read_loops", loops_json(r.read_loops)},
          {"copy_loops", loops_json(r.copy_loops)}};
}

Result<ProbeResult> probe_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return error("probe entry is not an object");
  try {
    ProbeResult r;
    r.cpu_model = j.at("cpu_model").get<std::string>();
    r.n_cpus = j.at("n_cpus").get<int>();
    r.isa = j.value("isa", std::string());
    r.n_threads = j.value("threads", 0);
    r.buffer_bytes = j.value("buffer_bytes", uint64_t{0});
    r.repetitions = j.value("repetitions", 0);
    for (const auto& s : j.value("bandwidth", nlohmann::json::array())) {
      r.bandwidth.push_back({s.at("threads").get<int>(), s.at("read_gbs").get<double>(),
                             s.at("copy_gbs").get<double>(), s.value("read_loop", std::string()),
                             s.value("copy_loop", std::string())});
    }
    r.read_gbs = j.at("read_gbs").get<double>();
    r.copy_gbs = j.value("copy_gbs", 0.0);
    r.f32_gflops_1t = j.value("f32_gflops_1t", 0.0);
    r.f32_gflops = j.value("f32_gflops", 0.0);
    r.int8_gops_1t = j.value("int8_gops_1t", 0.0);
    r.int8_gops = j.value("int8_gops", 0.0);
    r.bf16_gflops_1t = j.value("bf16_gflops_1t", 0.0);
    r.bf16_gflops = j.value("bf16_gflops", 0.0);
    r.memory_gb = j.value("memory_gb", 0.0);
    r.measured_at = j.value("measured_at", std::string());
    r.seconds = j.value("seconds", 0.0);
    r.load_avg = j.value("load_avg", 0.0);
    r.read_loop = j.value("read_loop", std::string());
    r.copy_loop = j.value("copy_loop", std::string());
    r.read_loops = loops_from_json(j, "read_loops");
    r.copy_loops = loops_from_json(j, "copy_loops");
    if (!(r.read_gbs > 0)) return error("probe entry has no read bandwidth");
    return r;
  } catch (const nlohmann::json::exception& e) {
    return error("probe entry: {}", e.what());
  }
}

std::string probe_cache_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  std::string base;
  if (xdg != nullptr && xdg[0] == '/') {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    base = std::string(home != nullptr ? home : ".") + "/.cache";
  }
  return base + "/ridge/probe.json";
}

std::optional<ProbeResult> load_probe(const std::string& path, const std::string& cpu_model,
                                      int n_cpus) {
  nlohmann::json cache = read_cache(path);
  if (!cache.contains("machines")) return std::nullopt;
  for (const auto& e : cache["machines"]) {
    if (!same_machine(e, cpu_model, n_cpus) || e.value("probe_version", 1) < kProbeVersion) {
      continue;
    }
    auto r = probe_from_json(e);
    if (r.ok()) return std::move(r).value();
  }
  return std::nullopt;
}

std::optional<ProbeResult> load_probe() {
  const int n_cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return load_probe(probe_cache_path(), cpu_features().model_name, n_cpus);
}

Status save_probe(const ProbeResult& r, const std::string& path) {
  nlohmann::json cache = read_cache(path);
  nlohmann::json machines = nlohmann::json::array();
  if (cache.contains("machines")) {
    for (const auto& e : cache["machines"]) {
      if (!same_machine(e, r.cpu_model, r.n_cpus)) machines.push_back(e);
    }
  }
  machines.push_back(probe_to_json(r));
  nlohmann::json out = {{"schema", kSchema}, {"machines", machines}};
  std::error_code ec;
  std::filesystem::path p(path);
  std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) return error("{}: cannot create directory: {}", p.parent_path().string(), ec.message());
  // Write then rename, so a concurrent reader never sees half a file.
  std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
  {
    std::ofstream f(tmp);
    if (!f) return error("{}: cannot write", tmp);
    f << out.dump(2) << "\n";
    if (!f) return error("{}: write failed", tmp);
  }
  std::filesystem::rename(tmp, p, ec);
  if (ec) return error("{}: cannot replace: {}", path, ec.message());
  return ok_status();
}

Status save_probe(const ProbeResult& r) { return save_probe(r, probe_cache_path()); }

bool probe_was_busy(const ProbeResult& r) { return r.load_avg > 0.5 * std::max(r.n_cpus, 1); }

std::string format_probe(const ProbeResult& r) {
  std::string s = fmt::format(
      "{} · {} CPUs · {} loops · {:.2f} GiB buffer · median of {} passes · {:.1f} GB RAM\n\n",
      r.cpu_model.empty() ? "unknown CPU" : r.cpu_model, r.n_cpus, r.isa,
      static_cast<double>(r.buffer_bytes) / (1u << 30), r.repetitions, r.memory_gb);
  s += fmt::format("{:>8}  {:>10}  {:>10}  {}\n", "threads", "read GB/s", "copy GB/s",
                   "best loops (read; copy)");
  for (const auto& b : r.bandwidth) {
    s += fmt::format("{:>8}  {:>10.1f}  {:>10.1f}  {}; {}\n", b.n_threads, b.read_gbs, b.copy_gbs,
                     b.read_loop, b.copy_loop);
  }
  auto variants = [&](const char* what, const std::vector<LoopSample>& v) {
    if (v.empty()) return;
    s += fmt::format("{} loops at {} threads, GB/s:", what, r.n_threads);
    for (size_t i = 0; i < v.size(); ++i) {
      s += fmt::format("{} {} {:.1f}", i == 0 ? "" : " ·", v[i].loop, v[i].gbs);
    }
    s += "\n";
  };
  s += "\n";
  variants("read", r.read_loops);
  variants("copy", r.copy_loops);
  s += fmt::format("\n{:<22}  {:>14}  {:>14}\n", "peak arithmetic", "1 thread",
                   fmt::format("{} threads", r.n_threads));
  auto row = [&](const char* name, double one, double all, const char* unit) {
    if (all <= 0) {
      s += fmt::format("{:<22}  {:>14}  {:>14}\n", name, "n/a", "n/a");
    } else {
      s += fmt::format("{:<22}  {:>8.1f} {:<5}  {:>8.1f} {:<5}\n", name, one, unit, all, unit);
    }
  };
  row("f32 FMA", r.f32_gflops_1t, r.f32_gflops, "GFLOP/s");
  row("int8 dot", r.int8_gops_1t, r.int8_gops, "GOP/s");
  row("bf16 dot", r.bf16_gflops_1t, r.bf16_gflops, "GFLOP/s");
  if (r.read_gbs > 0 && r.f32_gflops > 0) {
    s += fmt::format("\nridge point: f32 {:.1f} FLOP/byte", r.f32_gflops / r.read_gbs);
    if (r.int8_gops > 0) s += fmt::format(" · int8 {:.1f} OP/byte", r.int8_gops / r.read_gbs);
    if (r.bf16_gflops > 0) s += fmt::format(" · bf16 {:.1f} FLOP/byte", r.bf16_gflops / r.read_gbs);
    s += "\n";
  }
  s += fmt::format("measured {} in {:.1f} s\n", r.measured_at, r.seconds);
  if (probe_was_busy(r)) {
    s += fmt::format("warning: the machine was busy (load average {:.1f} on {} CPUs): these figures "
                     "are likely low; rerun `ridge probe --force` when it is idle\n",
                     r.load_avg, r.n_cpus);
  }
  return s;
}

}  // namespace ridge::analysis
