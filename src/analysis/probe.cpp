// Measurement side of `ridge probe` (cache and formatting: probe_cache.cpp).
#include "analysis/probe.h"

#include <sys/mman.h>

#include <algorithm>
#include <barrier>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <thread>

#include "analysis/probe_kernels.h"
#include "analysis/probe_loops.h"
#include "base/cpu_features.h"
#include "base/meminfo.h"
#include "base/timer.h"

namespace ridge::analysis {
namespace {

namespace pk = probe_kernels;

// Runs body(i) on n threads released together; returns last end - first start, in seconds.
template <typename Body>
double timed_parallel(int n, const Body& body) {
  std::barrier sync(n);
  std::vector<double> t0(static_cast<size_t>(n)), t1(static_cast<size_t>(n));
  auto work = [&](int i) {
    sync.arrive_and_wait();
    t0[static_cast<size_t>(i)] = now_seconds();
    body(i);
    t1[static_cast<size_t>(i)] = now_seconds();
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back(work, i);
  work(0);
  for (auto& t : threads) t.join();
  return *std::max_element(t1.begin(), t1.end()) - *std::min_element(t0.begin(), t0.end());
}

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

double mem_total_gb() { return static_cast<double>(meminfo_bytes("MemTotal")) / 1e9; }

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  in >> one;
  return in ? one : 0.0;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Best rate (ops/s) of `loop` on n threads: iterations sized from a calibration run.
template <typename Loop>
double compute_peak(Loop loop, double ops_per_iter, int n, const ProbeOptions& opt, float* sink) {
  int64_t iters = 1000;
  double t = 0;
  while ((t = timed_parallel(1, [&](int) { *sink += static_cast<float>(loop(iters)); })) < 0.005) {
    iters *= 4;
  }
  iters = std::max<int64_t>(1000, static_cast<int64_t>(static_cast<double>(iters) *
                                                       opt.compute_seconds / t));
  double best = 0;
  std::vector<float> sinks(static_cast<size_t>(n));
  for (int r = 0; r < opt.repetitions; ++r) {
    double s = timed_parallel(n, [&](int i) { sinks[static_cast<size_t>(i)] += static_cast<float>(loop(iters)); });
    best = std::max(best, static_cast<double>(n) * static_cast<double>(iters) * ops_per_iter / s);
  }
  for (float v : sinks) *sink += v;
  return best;
}

// Read and copy bandwidth on n threads: every loop variant's median over `reps` interleaved
// passes, the best variant kept. `data` holds n_floats; copies go from its first half to its second.
struct BandwidthRun {
  BandwidthSample best;
  std::vector<LoopSample> read_loops, copy_loops;
};

BandwidthRun measure_bandwidth(const ProbeLoops& loops, int n, float* data, size_t n_floats, int reps,
                               float* sink) {
  const size_t unit = pk::kMemStep * pk::kMaxStreams;
  const auto un = static_cast<size_t>(n);
  const size_t per = n_floats / un / unit * unit;      // each thread's read slice
  const size_t half = n_floats / 2 / un / unit * unit;  // each thread's copy slice
  BandwidthRun out;
  out.best.n_threads = n;
  std::vector<float> sums(un);
  // Round-robin over the variants, pass after pass: a burst of traffic from elsewhere on a shared
  // machine then lands on every variant alike instead of deciding which one "wins".
  const auto reads = probe_read_variants();
  const auto copies = probe_copy_variants();
  std::vector<std::vector<double>> read_rates(reads.size());
  std::vector<std::vector<double>> copy_rates(copies.size());
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t k = 0; k < reads.size(); ++k) {
      const double t = timed_parallel(n, [&](int i) {
        sums[static_cast<size_t>(i)] +=
            loops.read(data + per * static_cast<size_t>(i), per, reads[k]);
      });
      read_rates[k].push_back(static_cast<double>(per * un * sizeof(float)) / t / 1e9);
    }
    for (size_t k = 0; k < copies.size(); ++k) {
      const double t = timed_parallel(n, [&](int i) {
        const size_t off = half * static_cast<size_t>(i);
        loops.copy(data + n_floats / 2 + off, data + off, half, copies[k]);
      });
      copy_rates[k].push_back(static_cast<double>(half * un * 2 * sizeof(float)) / t / 1e9);
    }
  }
  for (size_t k = 0; k < reads.size(); ++k) {
    out.read_loops.push_back({probe_loop_name(reads[k], false), probe_median(read_rates[k])});
  }
  for (size_t k = 0; k < copies.size(); ++k) {
    out.copy_loops.push_back({probe_loop_name(copies[k], true), probe_median(copy_rates[k])});
  }
  for (float x : sums) *sink += x;
  auto by_rate = [](const LoopSample& a, const LoopSample& b) { return a.gbs < b.gbs; };
  const LoopSample& r = *std::max_element(out.read_loops.begin(), out.read_loops.end(), by_rate);
  const LoopSample& c = *std::max_element(out.copy_loops.begin(), out.copy_loops.end(), by_rate);
  out.best.read_gbs = r.gbs;
  out.best.read_loop = r.loop;
  out.best.copy_gbs = c.gbs;
  out.best.copy_loop = c.loop;
  return out;
}

}  // namespace

double probe_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

std::vector<int> probe_thread_counts(int max_threads) {
  std::vector<int> out;
  for (int n = 1; n < max_threads; n *= 2) out.push_back(n);
  if (max_threads >= 1) out.push_back(max_threads);
  return out;
}

Result<ProbeResult> run_probe(const ProbeOptions& opt) {
  Stopwatch clock;
  const double load = load_average();
  RIDGE_ASSIGN_OR_RETURN(ProbeLoops loops, select_probe_loops(opt.isa));
  const int n_cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int max_threads = opt.max_threads > 0 ? opt.max_threads : n_cpus;
  if (opt.repetitions < 1) return usage_error("probe: repetitions must be >= 1");
  // Each thread's slice of each half is a whole number of loop steps of every stream.
  const uint64_t unit = pk::kMemStep * pk::kMaxStreams * sizeof(float) * 2 *
                        static_cast<uint64_t>(max_threads);
  if (opt.buffer_bytes < unit) return usage_error("probe: buffer of {} bytes is too small", opt.buffer_bytes);
  const uint64_t bytes = opt.buffer_bytes / unit * unit;
  // 2 MiB alignment and huge pages where the kernel gives them (fewer TLB misses: the best
  // rate); aligned_alloc wants a multiple of the alignment.
  constexpr uint64_t kAlign = 1u << 21;
  const uint64_t alloc = (bytes + kAlign - 1) / kAlign * kAlign;
  std::unique_ptr<float, FreeDeleter> buf(static_cast<float*>(std::aligned_alloc(kAlign, alloc)));
  if (!buf) return error("probe: cannot allocate {} bytes", bytes);
  (void)madvise(buf.get(), alloc, MADV_HUGEPAGE);  // advice only: failure changes nothing
  float* data = buf.get();
  const size_t n_floats = bytes / sizeof(float);

  // First touch by every thread (pages land near the threads that read them), small values.
  timed_parallel(max_threads, [&](int i) {
    size_t per = n_floats / static_cast<size_t>(max_threads);
    std::fill(data + per * static_cast<size_t>(i), data + per * static_cast<size_t>(i + 1), 1.0f);
  });

  ProbeResult r;
  r.cpu_model = cpu_features().model_name;
  r.n_cpus = n_cpus;
  r.isa = loops.name;
  r.n_threads = max_threads;
  r.buffer_bytes = bytes;
  r.repetitions = opt.repetitions;
  float sink = 0;
  for (int n : probe_thread_counts(max_threads)) {
    BandwidthRun run = measure_bandwidth(loops, n, data, n_floats, opt.repetitions, &sink);
    const BandwidthSample& s = run.best;
    if (s.read_gbs > r.read_gbs) {
      r.read_gbs = s.read_gbs;
      r.read_loop = s.read_loop;
    }
    if (s.copy_gbs > r.copy_gbs) {
      r.copy_gbs = s.copy_gbs;
      r.copy_loop = s.copy_loop;
    }
    r.bandwidth.push_back(s);
    r.read_loops = std::move(run.read_loops);  // the last (most threads) is kept
    r.copy_loops = std::move(run.copy_loops);
  }
  buf.reset();  // compute loops need no memory

  if (loops.fma) {
    r.f32_gflops_1t = compute_peak(loops.fma, loops.fma_flops, 1, opt, &sink) / 1e9;
    r.f32_gflops = compute_peak(loops.fma, loops.fma_flops, max_threads, opt, &sink) / 1e9;
  }
  if (loops.int8) {
    r.int8_gops_1t = compute_peak(loops.int8, loops.int8_ops, 1, opt, &sink) / 1e9;
    r.int8_gops = compute_peak(loops.int8, loops.int8_ops, max_threads, opt, &sink) / 1e9;
  }
  if (loops.bf16) {
    r.bf16_gflops_1t = compute_peak(loops.bf16, loops.bf16_flops, 1, opt, &sink) / 1e9;
    r.bf16_gflops = compute_peak(loops.bf16, loops.bf16_flops, max_threads, opt, &sink) / 1e9;
  }
  volatile float keep = sink;  // the loops' results are used
  (void)keep;
  r.memory_gb = mem_total_gb();
  r.load_avg = load;
  r.measured_at = utc_now();
  r.seconds = clock.seconds();
  return r;
}

}  // namespace ridge::analysis
