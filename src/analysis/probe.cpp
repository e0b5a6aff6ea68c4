// Measurement side of `ridge probe` (cache and formatting: probe_cache.cpp).
#include "analysis/probe.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <barrier>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <memory>
#include <thread>

#include "analysis/probe_kernels.h"
#include "base/cpu_features.h"
#include "base/meminfo.h"
#include "base/timer.h"

namespace ridge::analysis {
namespace {

namespace pk = probe_kernels;

// The loops of one ISA; compute loops are null where the instruction is absent.
struct Loops {
  std::string name;
  float (*read)(const float*, size_t, const pk::MemLoop&) = nullptr;
  void (*copy)(float*, const float*, size_t, const pk::MemLoop&) = nullptr;
  float (*fma)(int64_t) = nullptr;
  double fma_flops = 0;
  int32_t (*int8)(int64_t) = nullptr;
  double int8_ops = 0;
  float (*bf16)(int64_t) = nullptr;
  double bf16_flops = 0;
};

// The variants timed; the best median wins. Several streams per thread keep more cache-line
// misses in flight than one (as the kernels' row panels do); the prefetch into L2 runs ahead of
// what the hardware prefetcher would fetch. Kept small: every variant costs passes.
// Chosen on a 2-core Zen 4 VM (noisy, shared): on 2 threads several streams with a 1-2 KiB
// prefetch read fastest (5-15% above one plain stream, medians of interleaved runs; which of them
// wins varies run to run), 4 streams without prefetch never won and 16 streams were slower.
// One plain stream stays as the baseline (probe version 1's loop). The last one reads as the
// AVX-512 K-format decode does since it prefetches into L1 too (docs/decode.md, Prefetch): one
// stream, 8 KiB ahead into L2 and 2 KiB into L1, so that the roof includes the kernels' own
// pattern (1.7B Q4_K_M decode had read 109% of the version 2 probe). Here it won at one thread
// in the slow state (26.1 GB/s) and read 31 against 50 GB/s for the best in the fast one.
constexpr pk::MemLoop kReadVariants[] = {
    {1, 0, false},    {1, 1024, false}, {2, 2048, false},       {4, 1024, false},
    {4, 2048, false}, {8, 1024, false}, {1, 8192, false, 2048},
};
constexpr pk::MemLoop kCopyVariants[] = {
    {1, 0, false}, {1, 0, true}, {1, 2048, true},
};

std::string loop_name(const pk::MemLoop& l, bool copy) {
  std::string s = copy ? (l.nontemporal ? "streaming stores" : "plain stores")
                       : fmt::format("{} stream{}", l.n_streams, l.n_streams > 1 ? "s" : "");
  if (l.prefetch_bytes > 0) s += fmt::format(" + prefetch {} KiB", l.prefetch_bytes / 1024.0);
  if (l.prefetch_bytes > 0 && l.l1_bytes > 0) s += fmt::format(" (L1 {} KiB)", l.l1_bytes / 1024.0);
  return s;
}

Result<Loops> select_loops(const std::string& forced) {
  const CpuFeatures& f = cpu_features();
  const bool avx512 = f.has_avx2_set() && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  std::string isa = forced.empty() ? (avx512 ? "avx512" : f.has_avx2_set() ? "avx2" : "generic")
                                   : forced;
  Loops l;
  l.name = isa;
  if (isa == "avx512") {
    if (!avx512) return usage_error("probe: this CPU has no AVX-512 (F/BW/VL/DQ)");
    l.read = pk::avx512::read_sum;
    l.copy = pk::avx512::copy;
    l.fma = pk::avx512::fma_loop;
    l.fma_flops = pk::kFmaFlopsAvx512;
    if (f.avx512vnni) {
      l.int8 = pk::avx512::int8_loop;
      l.int8_ops = pk::kInt8OpsAvx512;
    } else {
      l.int8 = pk::avx2::int8_loop;
      l.int8_ops = pk::kInt8OpsAvx2;
    }
    if (f.avx512bf16) {
      l.bf16 = pk::avx512::bf16_loop;
      l.bf16_flops = pk::kBf16FlopsAvx512;
    }
  } else if (isa == "avx2") {
    if (!f.has_avx2_set()) return usage_error("probe: this CPU has no AVX2/FMA/F16C");
    l.read = pk::avx2::read_sum;
    l.copy = pk::avx2::copy;
    l.fma = pk::avx2::fma_loop;
    l.fma_flops = pk::kFmaFlopsAvx2;
    l.int8 = pk::avx2::int8_loop;
    l.int8_ops = pk::kInt8OpsAvx2;
  } else if (isa == "generic") {
    l.read = pk::generic::read_sum;
    l.copy = pk::generic::copy;
  } else {
    return usage_error("probe: unknown ISA '{}' (avx512, avx2, generic)", isa);
  }
  return l;
}

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

BandwidthRun measure_bandwidth(const Loops& loops, int n, float* data, size_t n_floats, int reps,
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
  std::vector<std::vector<double>> read_rates(std::size(kReadVariants));
  std::vector<std::vector<double>> copy_rates(std::size(kCopyVariants));
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t k = 0; k < std::size(kReadVariants); ++k) {
      const double t = timed_parallel(n, [&](int i) {
        sums[static_cast<size_t>(i)] +=
            loops.read(data + per * static_cast<size_t>(i), per, kReadVariants[k]);
      });
      read_rates[k].push_back(static_cast<double>(per * un * sizeof(float)) / t / 1e9);
    }
    for (size_t k = 0; k < std::size(kCopyVariants); ++k) {
      const double t = timed_parallel(n, [&](int i) {
        const size_t off = half * static_cast<size_t>(i);
        loops.copy(data + n_floats / 2 + off, data + off, half, kCopyVariants[k]);
      });
      copy_rates[k].push_back(static_cast<double>(half * un * 2 * sizeof(float)) / t / 1e9);
    }
  }
  for (size_t k = 0; k < std::size(kReadVariants); ++k) {
    out.read_loops.push_back({loop_name(kReadVariants[k], false), probe_median(read_rates[k])});
  }
  for (size_t k = 0; k < std::size(kCopyVariants); ++k) {
    out.copy_loops.push_back({loop_name(kCopyVariants[k], true), probe_median(copy_rates[k])});
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
  RIDGE_ASSIGN_OR_RETURN(Loops loops, select_loops(opt.isa));
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
