// Matmul kernels vs memory bandwidth, measured in the same run.
//
//   BM_Gemv/<type>/<isa>/threads    m = 1 over an 8192 x 8192 weight matrix (>> L3): GB/s of weights
//   BM_Gemm/<type>/<isa>/rows/cols  m = 512 prefill on Qwen3-0.6B shapes, 1 and 2 threads: GFLOP/s
//   BM_DecodeStack/<type>/<isa>/threads  m = 1 through a Qwen3-0.6B-shaped stack of 196 matrices
//   BM_GemvHot/<type>/<isa>         m = 1, 1 thread, over a 1024 x 1024 matrix that stays in L2:
//                                   the kernel's compute ceiling in GB/s, on the engine's layout
//
// Counters: GB/s (10^9 bytes of weights per wall second), pct_of_read (GB/s over the read
// bandwidth that `ridge probe`'s loops measure at start with the same thread count: the best of
// its read variants, the roof ridge reports against), pct_of_paired on the benchmarks that read
// from memory (BM_Gemv, BM_DecodeStack: each iteration against a read pass on the same threads
// right after it, the median of those ratios; docs/bench.md, "The paired probe"), GFLOP/s;
// single-thread runs add
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
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/probe.h"
#include "analysis/read_pass.h"
#include "base/check.h"
#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/weight_layout.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

// Read bandwidth per thread count (GB/s), measured by the probe in main().
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

// The read pass (`ridge bench --paired-probe`'s) that the from-memory benchmarks run on the same
// pool after every timed iteration: pct_of_paired is the median over iterations of the
// iteration's GB/s over the pass's right after it, the memory of the same moment.
analysis::ReadPass& read_pass_of(int n) {
  static std::map<int, std::unique_ptr<analysis::ReadPass>> passes;
  auto& p = passes[n];
  if (!p) {
    auto r = analysis::ReadPass::create(pool_of(n));
    RIDGE_CHECK(r.ok());
    p = std::make_unique<analysis::ReadPass>(std::move(r).value());
  }
  return *p;
}

// Times `body` once per benchmark iteration, each followed (untimed) by a read pass when `paired`;
// sets GB/s, pct_of_read and pct_of_paired for `bytes` per iteration. Returns the seconds timed.
template <typename Body>
double time_iterations(benchmark::State& state, int n_threads, double bytes, bool paired,
                       const Body& body) {
  double seconds = 0;
  std::vector<double> ratios;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    benchmark::ClobberMemory();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    seconds += dt;
    if (paired) {
      state.PauseTiming();
      ratios.push_back(bytes / dt / read_pass_of(n_threads).run(pool_of(n_threads)));
      state.ResumeTiming();
    }
  }
  const double gbps = bytes * static_cast<double>(state.iterations()) / 1e9 / seconds;
  state.counters["GB/s"] = gbps;
  const auto it = read_gbps().find(n_threads);
  if (it != read_gbps().end()) state.counters["pct_of_read"] = 100.0 * gbps / it->second;
  if (paired) state.counters["pct_of_paired"] = 100.0 * analysis::probe_median(ratios);
  return seconds;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Matrix {
  GgmlType type;
  int64_t rows, cols;
  uint64_t row_bytes;
  HugeBuffer storage;  // huge pages, as the engine reads a model's weights (gguf::Backing)
  std::span<uint8_t> bytes;
  WeightLayout layout = WeightLayout::kRows;  // as the engine converts it for the ISA
  WeightView view() const { return {type, bytes.data(), rows, cols, row_bytes, layout}; }
};

Matrix make_matrix(GgmlType type, int64_t rows, int64_t cols, WeightLayout layout) {
  const auto& tr = traits(type);
  Matrix w{type, rows, cols, static_cast<uint64_t>(cols / tr.block_elems) * tr.block_bytes, {}, {}, layout};
  const uint64_t n_bytes = w.row_bytes * static_cast<uint64_t>(rows);
  w.storage = alloc_huge(n_bytes);
  RIDGE_CHECK(w.storage != nullptr);
  w.bytes = std::span<uint8_t>(static_cast<uint8_t*>(w.storage.get()), n_bytes);
  std::mt19937 rng(42);
  for (auto& b : w.bytes) b = static_cast<uint8_t>(rng() & 0x3f);  // finite f16/bf16/f32 values
  if (type == GgmlType::kQ8_0) {
    for (size_t b = 0; b < w.bytes.size(); b += 34) {
      const uint16_t d = f32_to_fp16(0.01f);
      std::memcpy(&w.bytes[b], &d, 2);
    }
  }
  if (type == GgmlType::kMXFP4) {  // scales 2^-8 (not the subnormal ones random bytes would give)
    for (size_t b = 0; b < w.bytes.size(); b += 17) w.bytes[b] = 120;
  }
  if (layout != WeightLayout::kRows) convert_layout(type, layout, w.bytes.data(), rows, cols);
  return w;
}

const Matrix& cached_matrix(GgmlType type, int64_t rows, int64_t cols, WeightLayout layout) {
  static std::map<std::tuple<int, int64_t, int64_t, int>, Matrix> cache;
  auto key = std::make_tuple(static_cast<int>(type), rows, cols, static_cast<int>(layout));
  auto it = cache.find(key);
  if (it == cache.end()) {
    cache.clear();  // keep one big matrix alive at a time
    it = cache.emplace(key, make_matrix(type, rows, cols, layout)).first;
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
  const Matrix& w = cached_matrix(type, rows, cols, k.layout_for(type));
  std::vector<float> x(static_cast<size_t>(m * cols));
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  for (auto& v : x) v = nd(rng);
  std::vector<float> y(static_cast<size_t>(m * rows));
  ThreadPool& pool = pool_of(n_threads);
  k.matmul(w.view(), x.data(), cols, m, y.data(), rows, pool);  // warm-up (page faults, caches)
  const double cpu0 = thread_cpu_seconds();
  const double bytes = static_cast<double>(w.bytes.size());
  // A matrix far beyond the last-level cache is read from memory: judge it against a read pass
  // of the same moment too (the L2-resident BM_GemvHot is not).
  const bool from_memory = bytes > 64e6;
  const double seconds = time_iterations(state, n_threads, bytes, from_memory, [&] {
    k.matmul(w.view(), x.data(), cols, m, y.data(), rows, pool);
  });
  const double cpu_seconds = thread_cpu_seconds() - cpu0;
  const double iters = static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] = 2.0 * static_cast<double>(m * rows * cols) * iters / 1e9 / seconds;
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
  static std::map<std::pair<int, int>, std::vector<Matrix>> stacks;
  const auto key = std::make_pair(static_cast<int>(type), static_cast<int>(k.layout_for(type)));
  if (stacks[key].empty()) {
    stacks.clear();
    auto& fresh = stacks[key];
    for (int l = 0; l < kLayers; ++l) {
      for (auto [rows, cols] : shapes) fresh.push_back(make_matrix(type, rows, cols, k.layout_for(type)));
    }
  }
  auto& mats = stacks[key];
  std::vector<float> x(3072, 0.5f), y(3072);
  ThreadPool& pool = pool_of(n_threads);
  double bytes = 0;
  for (const Matrix& w : mats) bytes += static_cast<double>(w.bytes.size());
  auto pass = [&] {
    for (const Matrix& w : mats) k.matmul(w.view(), x.data(), w.cols, 1, y.data(), w.rows, pool);
  };
  pass();  // warm-up
  time_iterations(state, n_threads, bytes, true, pass);
}

void register_all() {
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
                        GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
                        GgmlType::kMXFP4, GgmlType::kIQ4_XS}) {
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
  // The compute ceiling of each decode kernel: a matrix of at most 1.1 MB, read again and again.
  for (GgmlType type : {GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0,
                        GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ2_K,
                        GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
                        GgmlType::kMXFP4, GgmlType::kIQ4_XS}) {
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
      const std::string name = "BM_GemvHot/" + std::string(ggml_type_name(type)) + "/" + std::string(isa_name(isa));
      const int64_t cols = type == GgmlType::kF16 || type == GgmlType::kBF16 ? 512 : 1024;
      benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
        run_matmul_bench(s, type, isa, 1, 1024, cols, 1);
      })->UseRealTime()->Unit(benchmark::kMicrosecond);
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
  ridge::analysis::ProbeOptions probe;
  probe.max_threads = 2;
  probe.compute_seconds = 0.01;
  const auto roof = ridge::analysis::run_probe(probe);
  if (!roof.ok()) {
    std::fprintf(stderr, "kernels_bench: probe failed: %s\n", roof.status().message().c_str());
    return 1;
  }
  for (const auto& b : roof->bandwidth) {
    ridge::kernels::read_gbps()[b.n_threads] = b.read_gbs;
    std::printf("read bandwidth (ridge probe), %d thread(s): %.1f GB/s (%s)\n", b.n_threads,
                b.read_gbs, b.read_loop.c_str());
  }
  ridge::kernels::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
