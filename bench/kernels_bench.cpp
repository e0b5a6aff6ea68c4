// Matmul kernels vs memory bandwidth, measured in the same run.
//
//   BM_ReadBandwidth/threads        plain read of a 512 MB buffer (the roofline for decode)
//   BM_Gemv/<type>/<isa>/threads    m = 1 over an 8192 x 8192 weight matrix (>> L3): GB/s of weights
//   BM_Gemm/<type>/<isa>/rows/cols  m = 512 prefill on Qwen3-0.6B shapes, 1 and 2 threads: GFLOP/s
//
// Counters: GB/s (10^9 bytes of weights per wall second), pct_of_read (GB/s over the read
// bandwidth measured at start with the same thread count), GFLOP/s; single-thread runs add
// GB/cpu_s and GFLOP/cpu_s (per CPU-second of the calling thread: what the kernel does while it
// runs, the useful figure on a shared machine). Use --benchmark_repetitions=5 and read medians.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

constexpr size_t kReadBytes = size_t{512} << 20;

// Read bandwidth per thread count, filled by BM_ReadBandwidth (registered first).
std::map<int, double>& read_gbps() {
  static std::map<int, double> m;
  return m;
}

ThreadPool& pool_of(int n) {
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  auto& p = pools[n];
  if (!p) p = std::make_unique<ThreadPool>(n);
  return *p;
}

uint64_t sum_words(const uint64_t* p, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i + 4 <= n; i += 4) {
    a += p[i], b += p[i + 1], c += p[i + 2], d += p[i + 3];
  }
  return a + b + c + d;
}

void BM_ReadBandwidth(benchmark::State& state) {
  const int n_threads = static_cast<int>(state.range(0));
  static std::vector<uint64_t> buf(kReadBytes / 8, 1);
  ThreadPool& pool = pool_of(n_threads);
  std::vector<uint64_t> sums(static_cast<size_t>(n_threads));
  for (auto _ : state) {
    pool.run([&](int ith, int nth) {
      const Range r = split_range(static_cast<int64_t>(buf.size()), ith, nth, 64);
      sums[static_cast<size_t>(ith)] =
          sum_words(buf.data() + r.begin, static_cast<size_t>(r.end - r.begin));
    });
    benchmark::DoNotOptimize(sums.data());
  }
  state.counters["GB"] = benchmark::Counter(static_cast<double>(kReadBytes) / 1e9,
                                            benchmark::Counter::kIsIterationInvariantRate);
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Median of 5 timed passes of the same read, for the pct_of_read ratios (measured at start).
double measure_read_gbps(int n_threads) {
  static std::vector<uint64_t> buf(kReadBytes / 8, 1);
  ThreadPool& pool = pool_of(n_threads);
  std::vector<double> rates;
  std::vector<uint64_t> sums(static_cast<size_t>(n_threads));
  for (int rep = 0; rep < 6; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.run([&](int ith, int nth) {
      const Range r = split_range(static_cast<int64_t>(buf.size()), ith, nth, 64);
      sums[static_cast<size_t>(ith)] =
          sum_words(buf.data() + r.begin, static_cast<size_t>(r.end - r.begin));
    });
    benchmark::DoNotOptimize(sums.data());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep > 0) rates.push_back(static_cast<double>(kReadBytes) / 1e9 / s);  // rep 0 warms up
  }
  std::sort(rates.begin(), rates.end());
  if (n_threads == 1) {  // the same read per CPU-second of the reading thread
    const double c0 = thread_cpu_seconds();
    benchmark::DoNotOptimize(sum_words(buf.data(), buf.size()));
    std::printf("read bandwidth, 1 thread, per CPU-second: %.1f GB/s\n",
                static_cast<double>(kReadBytes) / 1e9 / (thread_cpu_seconds() - c0));
  }
  return rates[rates.size() / 2];
}

struct Matrix {
  GgmlType type;
  int64_t rows, cols;
  uint64_t row_bytes;
  std::vector<uint8_t> bytes;
  WeightView view() const { return {type, bytes.data(), rows, cols, row_bytes}; }
};

Matrix make_matrix(GgmlType type, int64_t rows, int64_t cols) {
  const auto& tr = traits(type);
  Matrix w{type, rows, cols, static_cast<uint64_t>(cols / tr.block_elems) * tr.block_bytes, {}};
  w.bytes.resize(w.row_bytes * static_cast<uint64_t>(rows));
  std::mt19937 rng(42);
  for (auto& b : w.bytes) b = static_cast<uint8_t>(rng() & 0x3f);  // finite f16/bf16/f32 values
  if (type == GgmlType::kQ8_0) {
    for (size_t b = 0; b < w.bytes.size(); b += 34) {
      const uint16_t d = f32_to_fp16(0.01f);
      std::memcpy(&w.bytes[b], &d, 2);
    }
  }
  return w;
}

const Matrix& cached_matrix(GgmlType type, int64_t rows, int64_t cols) {
  static std::map<std::tuple<int, int64_t, int64_t>, Matrix> cache;
  auto key = std::make_tuple(static_cast<int>(type), rows, cols);
  auto it = cache.find(key);
  if (it == cache.end()) {
    cache.clear();  // keep one big matrix alive at a time
    it = cache.emplace(key, make_matrix(type, rows, cols)).first;
  }
  return it->second;
}

void run_matmul_bench(benchmark::State& state, GgmlType type, Isa isa, int64_t m, int64_t rows,
                      int64_t cols, int n_threads) {
  if (!isa_supported(isa)) {
    state.SkipWithError("ISA not supported on this CPU");
    return;
  }
  const Kernels& k = kernels_for(isa);
  const Matrix& w = cached_matrix(type, rows, cols);
  std::vector<float> x(static_cast<size_t>(m * cols));
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  for (auto& v : x) v = nd(rng);
  std::vector<float> y(static_cast<size_t>(m * rows));
  ThreadPool& pool = pool_of(n_threads);
  k.matmul(w.view(), x.data(), cols, m, y.data(), rows, pool);  // warm-up (page faults, caches)
  double seconds = 0;
  const double cpu0 = thread_cpu_seconds();
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    k.matmul(w.view(), x.data(), cols, m, y.data(), rows, pool);
    benchmark::ClobberMemory();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const double cpu_seconds = thread_cpu_seconds() - cpu0;
  const double bytes = static_cast<double>(w.bytes.size());
  const double iters = static_cast<double>(state.iterations());
  const double gbps = bytes * iters / 1e9 / seconds;
  state.counters["GB/s"] = gbps;
  state.counters["GFLOP/s"] = 2.0 * static_cast<double>(m * rows * cols) * iters / 1e9 / seconds;
  const auto it = read_gbps().find(n_threads);
  if (it != read_gbps().end()) state.counters["pct_of_read"] = 100.0 * gbps / it->second;
  if (n_threads == 1) {
    // On a shared machine wall time includes time the thread was not running; per CPU-second
    // rates show what the kernel does while it runs (single thread only).
    state.counters["GB/cpu_s"] = bytes * iters / 1e9 / cpu_seconds;
    state.counters["GFLOP/cpu_s"] = 2.0 * static_cast<double>(m * rows * cols) * iters / 1e9 /
                                    cpu_seconds;
  }
}

// The decode pattern of a Qwen3-0.6B-shaped model: m = 1 through the 7 matrices of each of 28
// layers in order (q, k, v, o, gate, up, down; 15.7 M weights a layer, far more than L3 in all),
// each a separate matmul call as in the forward pass. Small matrices (1-3 M weights) stress what
// one big GEMV hides: per-call dispatch, and the prefetch across many short rows.
void run_decode_stack_bench(benchmark::State& state, GgmlType type, Isa isa, int n_threads) {
  if (!isa_supported(isa)) {
    state.SkipWithError("ISA not supported on this CPU");
    return;
  }
  const Kernels& k = kernels_for(isa);
  constexpr int kLayers = 28;
  const std::pair<int64_t, int64_t> shapes[] = {{2048, 1024}, {1024, 1024}, {1024, 1024},
                                                {1024, 2048}, {3072, 1024}, {3072, 1024},
                                                {1024, 3072}};
  static std::map<int, std::vector<Matrix>> stacks;
  auto& stack = stacks[static_cast<int>(type)];
  if (stack.empty()) {
    stacks.clear();
    auto& fresh = stacks[static_cast<int>(type)];
    for (int l = 0; l < kLayers; ++l) {
      for (auto [rows, cols] : shapes) fresh.push_back(make_matrix(type, rows, cols));
    }
  }
  auto& mats = stacks[static_cast<int>(type)];
  std::vector<float> x(3072, 0.5f), y(3072);
  ThreadPool& pool = pool_of(n_threads);
  double bytes = 0;
  for (const Matrix& w : mats) bytes += static_cast<double>(w.bytes.size());
  auto pass = [&] {
    for (const Matrix& w : mats) k.matmul(w.view(), x.data(), w.cols, 1, y.data(), w.rows, pool);
  };
  pass();  // warm-up
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    pass();
    benchmark::ClobberMemory();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const double gbps = bytes * static_cast<double>(state.iterations()) / 1e9 / seconds;
  state.counters["GB/s"] = gbps;
  const auto it = read_gbps().find(n_threads);
  if (it != read_gbps().end()) state.counters["pct_of_read"] = 100.0 * gbps / it->second;
}

void register_all() {
  for (int t : {1, 2}) {
    benchmark::RegisterBenchmark(("BM_ReadBandwidth/threads:" + std::to_string(t)).c_str(),
                                 BM_ReadBandwidth)
        ->Arg(t)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  const GgmlType types[] = {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0};
  for (GgmlType type : types) {
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
      for (int t : {1, 2}) {
        const std::string name = "BM_Gemv/" + std::string(ggml_type_name(type)) + "/" +
                                 std::string(isa_name(isa)) + "/threads:" + std::to_string(t);
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
          run_matmul_bench(s, type, isa, 1, 8192, 8192, t);
        })->UseRealTime()->Unit(benchmark::kMillisecond);
      }
    }
  }
  // Every weight format ridge reads (F32 left out: 1.8 GB of stack for what F16 already shows).
  for (GgmlType type : {GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0,
                        GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ2_K,
                        GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K}) {
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
      for (int t : {1, 2}) {
        const std::string name = "BM_DecodeStack/" + std::string(ggml_type_name(type)) + "/" +
                                 std::string(isa_name(isa)) + "/threads:" + std::to_string(t);
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
          run_decode_stack_bench(s, type, isa, t);
        })->UseRealTime()->Unit(benchmark::kMillisecond);
      }
    }
  }
  // Qwen3-0.6B prefill shapes: ffn_gate/up [3072 x 1024], ffn_down [1024 x 3072].
  for (GgmlType type : {GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0,
                        GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3072, 1024}, {1024, 3072}}) {
        const std::string name = "BM_Gemm/" + std::string(ggml_type_name(type)) + "/" +
                                 std::string(isa_name(isa)) + "/m:512/rows:" +
                                 std::to_string(rows) + "/cols:" + std::to_string(cols) +
                                 "/threads:";
        for (int t : {1, 2}) {
          const std::string tname = name + std::to_string(t);
          benchmark::RegisterBenchmark(tname.c_str(), [=](benchmark::State& s) {
            run_matmul_bench(s, type, isa, 512, rows, cols, t);
          })->UseRealTime()->Unit(benchmark::kMillisecond);
        }
      }
    }
  }
}

}  // namespace
}  // namespace ridge::kernels

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (int t : {1, 2}) {
    const double gbps = ridge::kernels::measure_read_gbps(t);
    ridge::kernels::read_gbps()[t] = gbps;
    std::printf("read bandwidth, %d thread(s): %.1f GB/s (median of 5)\n", t, gbps);
  }
  ridge::kernels::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
