// Decode (m = 1) matmul over quantized weights vs memory read bandwidth, measured in one run.
//
//   BM_Read/threads                     plain read of a buffer as large as the weights
//   BM_QuantGemv/<type>/<isa>/threads   y = W x, W of ~160 MB (>> L3) in GGUF blocks: GB/s of
//                                       weight bytes streamed
//   BM_QuantGemvHot/<type>/<isa>/1     the same on 1 MB of weights (in L2): compute ceiling
//   BM_Quantize/<type>                  quantize_row on 4096-wide rows, 1 thread
//
// Counters: GB/s (10^9 bytes per second; compare BM_QuantGemv with BM_Read at the same thread
// count), Melem/s for the quantizers. The machine is shared: use --benchmark_repetitions=5 and
// read medians.
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/quant/quants.h"

namespace ridge::kernels {
namespace {

constexpr int64_t kCols = 4096;
constexpr size_t kTargetBytes = size_t{160} << 20;
constexpr size_t kHotBytes = size_t{1} << 20;  // fits L2: the kernels' compute ceiling

ThreadPool& pool_of(int n) {
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  auto& p = pools[n];
  if (!p) p = std::make_unique<ThreadPool>(n);
  return *p;
}

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

void BM_Read(benchmark::State& state) {
  const int n_threads = static_cast<int>(state.range(0));
  std::vector<uint64_t> buf(kTargetBytes / 8, 1);
  ThreadPool& pool = pool_of(n_threads);
  std::vector<uint64_t> sums(static_cast<size_t>(n_threads) * 8);
  for (auto _ : state) {
    pool.run([&](int ith, int nth) {
      const Range r = split_range(static_cast<int64_t>(buf.size()), ith, nth, 64);
      uint64_t a = 0, b = 0, c = 0, d = 0;
      for (int64_t i = r.begin; i + 4 <= r.end; i += 4) {
        a += buf[i], b += buf[i + 1], c += buf[i + 2], d += buf[i + 3];
      }
      sums[static_cast<size_t>(ith) * 8] = a + b + c + d;
    });
    benchmark::DoNotOptimize(sums.data());
  }
  const auto bytes = static_cast<double>(kTargetBytes) * static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsRate);
}

// Weights: 64 distinct quantized rows of Gaussian data, repeated to ~kTargetBytes.
struct Weights {
  std::vector<uint8_t> bytes;
  WeightView view;
};

Weights make_weights(GgmlType type, size_t target_bytes) {
  const auto& tr = traits(type);
  const uint64_t row_bytes = kCols / tr.block_elems * tr.block_bytes;
  const int64_t rows = static_cast<int64_t>(target_bytes / row_bytes);
  Weights w;
  w.bytes.resize(row_bytes * static_cast<uint64_t>(rows));
  const auto src = gaussian(64 * kCols, 1);
  for (int64_t j = 0; j < 64 && j < rows; ++j) quantize_row(type, src.data() + j * kCols, w.bytes.data() + j * row_bytes, kCols);
  for (int64_t j = 64; j < rows; ++j) std::memcpy(w.bytes.data() + j * row_bytes, w.bytes.data() + (j % 64) * row_bytes, row_bytes);
  w.view = {type, w.bytes.data(), rows, kCols, row_bytes};
  return w;
}

void BM_QuantGemv(benchmark::State& state, GgmlType type, Isa isa, size_t target_bytes) {
  const int n_threads = static_cast<int>(state.range(0));
  if (!isa_supported(isa)) {
    state.SkipWithError("ISA not supported on this CPU");
    return;
  }
  const Weights w = make_weights(type, target_bytes);
  const auto x = gaussian(kCols, 2);
  std::vector<float> y(static_cast<size_t>(w.view.rows));
  const Kernels& k = kernels_for(isa);
  ThreadPool& pool = pool_of(n_threads);
  for (auto _ : state) {
    k.matmul(w.view, x.data(), kCols, 1, y.data(), w.view.rows, pool);
    benchmark::ClobberMemory();
  }
  const auto bytes = static_cast<double>(w.bytes.size()) * static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsRate);
}

void BM_Quantize(benchmark::State& state, GgmlType type) {
  const auto& tr = traits(type);
  const int64_t rows = 16;
  const auto src = gaussian(rows * kCols, 3);
  std::vector<uint8_t> dst(rows * kCols / tr.block_elems * tr.block_bytes);
  for (auto _ : state) {
    for (int64_t j = 0; j < rows; ++j) {
      quantize_row(type, src.data() + j * kCols, dst.data() + j * (kCols / tr.block_elems) * tr.block_bytes, kCols);
    }
    benchmark::ClobberMemory();
  }
  state.counters["Melem/s"] = benchmark::Counter(
      static_cast<double>(rows * kCols) * static_cast<double>(state.iterations()) / 1e6,
      benchmark::Counter::kIsRate);
}

const GgmlType kGemvTypes[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                               GgmlType::kQ8_0, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K,
                               GgmlType::kQ5_K, GgmlType::kQ6_K};
const GgmlType kQuantTypes[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                                GgmlType::kQ8_0, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K,
                                GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ8_K, GgmlType::kIQ4_NL,
                                GgmlType::kIQ4_XS, GgmlType::kTQ1_0, GgmlType::kTQ2_0, GgmlType::kIQ2_XXS,
                                GgmlType::kIQ2_XS, GgmlType::kIQ2_S, GgmlType::kIQ3_XXS, GgmlType::kIQ3_S,
                                GgmlType::kIQ1_S, GgmlType::kIQ1_M};

}  // namespace
}  // namespace ridge::kernels

int main(int argc, char** argv) {
  using namespace ridge;
  using namespace ridge::kernels;
  benchmark::RegisterBenchmark("BM_Read", BM_Read)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
  for (GgmlType t : kGemvTypes) {
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
      const std::string name = "BM_QuantGemv/" + std::string(ridge::ggml_type_name(t)) + "/" +
                               std::string(isa_name(isa));
      benchmark::RegisterBenchmark(name.c_str(), BM_QuantGemv, t, isa, kTargetBytes)
          ->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("BM_QuantGemvHot/" + name.substr(13)).c_str(), BM_QuantGemv, t,
                                   isa, kHotBytes)
          ->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
  }
  for (GgmlType t : kQuantTypes) {
    const std::string name = "BM_Quantize/" + std::string(ridge::ggml_type_name(t));
    benchmark::RegisterBenchmark(name.c_str(), BM_Quantize, t)->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
