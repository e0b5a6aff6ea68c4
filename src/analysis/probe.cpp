// Measurement side of `ridge probe` (cache and formatting: probe_cache.cpp).
#include "analysis/probe.h"

#include <algorithm>
#include <barrier>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <thread>

#include "analysis/probe_kernels.h"
#include "base/cpu_features.h"
#include "base/timer.h"

namespace ridge::analysis {
namespace {

namespace pk = probe_kernels;

// The loops of one ISA; compute loops are null where the instruction is absent.
struct Loops {
  std::string name;
  float (*read)(const float*, size_t) = nullptr;
  void (*copy)(float*, const float*, size_t) = nullptr;
  float (*fma)(int64_t) = nullptr;
  double fma_flops = 0;
  int32_t (*int8)(int64_t) = nullptr;
  double int8_ops = 0;
  float (*bf16)(int64_t) = nullptr;
  double bf16_flops = 0;
};

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

double mem_total_gb() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  while (in >> key) {
    if (key == "MemTotal:") {
      in >> kb;
      return kb * 1024.0 / 1e9;
    }
    in.ignore(1 << 10, '\n');
  }
  return 0;
}

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

}  // namespace

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
  // Each thread's slice of each half is a whole number of loop steps (256-byte aligned).
  const uint64_t unit = pk::kMemStep * sizeof(float) * 2 * static_cast<uint64_t>(max_threads);
  if (opt.buffer_bytes < unit) return usage_error("probe: buffer of {} bytes is too small", opt.buffer_bytes);
  const uint64_t bytes = opt.buffer_bytes / unit * unit;
  // 2 MiB alignment (huge pages where the kernel gives them); aligned_alloc wants a multiple.
  constexpr uint64_t kAlign = 1u << 21;
  std::unique_ptr<float, FreeDeleter> buf(
      static_cast<float*>(std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign)));
  if (!buf) return error("probe: cannot allocate {} bytes", bytes);
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
    BandwidthSample s;
    s.n_threads = n;
    const size_t per = n_floats / static_cast<size_t>(n) / pk::kMemStep * pk::kMemStep;
    const size_t half = n_floats / 2 / static_cast<size_t>(n) / pk::kMemStep * pk::kMemStep;
    std::vector<float> sums(static_cast<size_t>(n));
    for (int rep = 0; rep < opt.repetitions; ++rep) {
      double t = timed_parallel(n, [&](int i) {
        sums[static_cast<size_t>(i)] += loops.read(data + per * static_cast<size_t>(i), per);
      });
      s.read_gbs = std::max(s.read_gbs, static_cast<double>(per * static_cast<size_t>(n) * 4) / t / 1e9);
      t = timed_parallel(n, [&](int i) {
        loops.copy(data + n_floats / 2 + half * static_cast<size_t>(i), data + half * static_cast<size_t>(i), half);
      });
      s.copy_gbs = std::max(s.copy_gbs, static_cast<double>(half * static_cast<size_t>(n) * 8) / t / 1e9);
    }
    for (float v : sums) sink += v;
    r.bandwidth.push_back(s);
    r.read_gbs = std::max(r.read_gbs, s.read_gbs);
    r.copy_gbs = std::max(r.copy_gbs, s.copy_gbs);
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
