// `ridge probe`: what this machine can actually do. Memory read and copy bandwidth for 1..N
// threads on buffers far larger than the last-level cache (the best of a few loop variants: the
// read rate ridge's kernels can reach, see probe_kernels.h), and the peak rate of the arithmetic
// instructions ridge's kernels use (f32 FMA, int8 dot, bf16 dot where present). Results are
// cached per CPU model in $XDG_CACHE_HOME/ridge/probe.json (default ~/.cache/ridge/probe.json).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace ridge::analysis {

struct BandwidthSample {
  int n_threads = 0;
  double read_gbs = 0;  // bytes read / s, 1e9 (best loop variant's median pass)
  double copy_gbs = 0;  // (bytes read + bytes written) / s, as STREAM counts a copy
  std::string read_loop;  // the variant that gave read_gbs, e.g. "4 streams + prefetch 2 KiB"
  std::string copy_loop;
};

// One loop variant's median rate (at the most threads measured).
struct LoopSample {
  std::string loop;
  double gbs = 0;
};

struct ProbeResult {
  std::string cpu_model;  // /proc/cpuinfo "model name"
  int n_cpus = 0;         // logical CPUs online
  std::string isa;        // loops used: "avx512", "avx2" or "generic"
  int n_threads = 0;      // most threads measured
  uint64_t buffer_bytes = 0;
  int repetitions = 0;                     // timed passes per loop variant (median kept)
  std::vector<BandwidthSample> bandwidth;  // one per thread count
  double read_gbs = 0;    // best read bandwidth over thread counts (and loop variants)
  double copy_gbs = 0;
  std::string read_loop, copy_loop;        // the variants that gave read_gbs / copy_gbs
  std::vector<LoopSample> read_loops, copy_loops;  // every variant at n_threads
  // Peaks in GFLOP/s (GOP/s for int8) on one thread and on n_threads; 0 = not measured (ISA
  // absent).
  double f32_gflops_1t = 0, f32_gflops = 0;
  double int8_gops_1t = 0, int8_gops = 0;
  double bf16_gflops_1t = 0, bf16_gflops = 0;
  double memory_gb = 0;     // MemTotal
  double load_avg = 0;      // 1-minute load average when the probe started (busy => figures low)
  std::string measured_at;  // UTC, ISO 8601
  double seconds = 0;       // how long the probe took
};

struct ProbeOptions {
  uint64_t buffer_bytes = 512ull << 20;  // far larger than the LLC of ridge's targets
  int max_threads = 0;                   // 0: every online CPU
  int repetitions = 5;                   // timed passes per loop variant; the median is kept
  double compute_seconds = 0.05;       // per compute measurement
  std::string isa;                     // "" = best available; "avx2", "generic" to force
};

// Thread counts measured: 1, 2, 4, ... up to max, and max itself.
std::vector<int> probe_thread_counts(int max_threads);

// Median of `v` (mean of the two middle values when the count is even); 0 when empty.
double probe_median(std::vector<double> v);

Result<ProbeResult> run_probe(const ProbeOptions& options);

// $XDG_CACHE_HOME/ridge/probe.json, or $HOME/.cache/ridge/probe.json.
std::string probe_cache_path();
// The cached figures of this CPU (model name and CPU count must match), or nullopt.
std::optional<ProbeResult> load_probe();
std::optional<ProbeResult> load_probe(const std::string& path, const std::string& cpu_model,
                                      int n_cpus);
// Adds or replaces this CPU's entry in the cache file (other CPUs' entries are kept).
Status save_probe(const ProbeResult& result);
Status save_probe(const ProbeResult& result, const std::string& path);

nlohmann::json probe_to_json(const ProbeResult& r);
Result<ProbeResult> probe_from_json(const nlohmann::json& j);

// Whether other work was running when the probe started (load average above half the CPUs).
bool probe_was_busy(const ProbeResult& r);

// Human-readable report (the default output of `ridge probe`).
std::string format_probe(const ProbeResult& r);

}  // namespace ridge::analysis
