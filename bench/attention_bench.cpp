// Paged attention of one decode token (qwen3-0.6b shapes: 16 query heads, 8 KV heads, head_dim
// 128, one layer) and of a 512-token prefill chunk, against contexts of 512..4096, per KV type.
// ./bench_attention --benchmark_filter=Decode   (counters: KV bytes read per second)
// BM_DecodeLayers runs the decode token through all 28 layers of the cache, one paged_attention
// call each, as the forward pass does: 2048-4096 positions are 235-470 MB of f16 KV, far beyond
// L3, so it measures the stream from memory (the one-layer cases above stay in L3).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "backend/cpu/paged_attention.h"
#include "model/batch.h"
#include "model/ops.h"

namespace ridge::backend::cpu {
namespace {

using model::Batch;
using model::dot_f32;
using model::softmax;

constexpr int64_t kHead = 16, kHeadKv = 8, kHd = 128, kBs = 16;

struct Setup {
  kv::KvCache kv;
  std::vector<int32_t> table;
};

Setup make(kv::KvType type, int64_t n_ctx, int64_t n_layer = 1) {
  const int64_t n_blocks = (n_ctx + kBs - 1) / kBs;
  auto kv = kv::KvCache::create(kv::KvCacheConfig{n_layer, kHeadKv, kHd, kBs, n_blocks, type});
  Setup s{std::move(kv).value(), {}};
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> k(kHeadKv * kHd), v(k.size());
  for (int64_t p = 0; p < n_blocks * kBs; ++p) {
    for (auto& x : k) x = nd(rng);
    for (auto& x : v) x = nd(rng);
    for (int64_t l = 0; l < n_layer; ++l) s.kv.write(l, p, k.data(), v.data());
  }
  for (int64_t b = 0; b < n_blocks; ++b) s.table.push_back(static_cast<int32_t>(b));
  return s;
}

void run(benchmark::State& state, kv::KvType type, bool prefill, int64_t n_layer = 1, int n_threads = 1,
         kernels::Isa isa = kernels::best_isa()) {
  if (!kernels::isa_supported(isa)) {
    state.SkipWithError("ISA not supported on this CPU");
    return;
  }
  const int64_t n_ctx = state.range(0);
  const int64_t n_tok = prefill ? 512 : 1;
  Setup s = make(type, n_ctx, n_layer);
  Batch b;
  b.add_seq(s.table, static_cast<int32_t>(n_ctx));
  for (int64_t t = n_ctx - n_tok; t < n_ctx; ++t) b.add_token(0, static_cast<int32_t>(t), 0, true, kBs);
  std::vector<float> q(static_cast<size_t>(n_tok * kHead * kHd), 0.1f), out(q.size());
  const int64_t per = attention_scratch_floats(kHead, kHeadKv, kHd, kBs, n_ctx);
  std::vector<float> scratch(static_cast<size_t>(per * n_threads));
  AttentionArgs a;
  a.q = q.data();
  a.out = out.data();
  a.batch = &b;
  a.cache = &s.kv;
  a.kernels = &kernels::kernels_for(isa);
  a.n_head = kHead;
  a.n_head_kv = kHeadKv;
  a.head_dim = kHd;
  a.scale = 0.088f;
  a.scratch = scratch.data();
  a.scratch_per_thread = per;
  ThreadPool pool(n_threads);
  for (auto _ : state) {
    for (int64_t l = 0; l < n_layer; ++l) {
      a.layer = l;
      paged_attention(a, pool);
    }
    benchmark::DoNotOptimize(out.data());
  }
  const double kv_bytes = 2.0 * static_cast<double>(s.kv.row_bytes(0)) * kHeadKv * static_cast<double>(n_ctx) *
                          static_cast<double>(n_layer);
  state.counters["kv_bytes/s"] = benchmark::Counter(kv_bytes, benchmark::Counter::kIsIterationInvariantRate);
}

void axpy_f32(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

// The attention before KV dtypes (commit ea670d9), for comparison: every (token, KV head)
// converts each K and V block to f32 into a buffer, then dot_f32 / axpy_f32 per query head.
void BM_DecodeOldConvert_f16(benchmark::State& state) {
  const int64_t n_ctx = state.range(0);
  Setup s = make(kv::KvType::kF16, n_ctx);
  const kernels::Kernels& k = kernels::kernels_for(kernels::best_isa());
  const int64_t group = kHead / kHeadKv;
  std::vector<float> q(kHead * kHd, 0.1f), out(q.size()), buf(kBs * kHd), scores(static_cast<size_t>(group * n_ctx));
  const int64_t n_blocks = (n_ctx + kBs - 1) / kBs;
  for (auto _ : state) {
    for (int64_t g = 0; g < kHeadKv; ++g) {
      for (int64_t blk = 0; blk < n_blocks; ++blk) {
        const int64_t n = std::min(kBs, n_ctx - blk * kBs);
        k.dequantize_row(GgmlType::kF16, s.kv.k_block(0, s.table[static_cast<size_t>(blk)], g), buf.data(), n * kHd);
        for (int64_t h = 0; h < group; ++h) {
          for (int64_t j = 0; j < n; ++j) {
            scores[static_cast<size_t>(h * n_ctx + blk * kBs + j)] =
                dot_f32(q.data() + (g * group + h) * kHd, buf.data() + j * kHd, kHd) * 0.088f;
          }
        }
      }
      for (int64_t h = 0; h < group; ++h) softmax(scores.data() + h * n_ctx, n_ctx);
      for (int64_t blk = 0; blk < n_blocks; ++blk) {
        const int64_t n = std::min(kBs, n_ctx - blk * kBs);
        k.dequantize_row(GgmlType::kF16, s.kv.v_block(0, s.table[static_cast<size_t>(blk)], g), buf.data(), n * kHd);
        for (int64_t h = 0; h < group; ++h) {
          for (int64_t j = 0; j < n; ++j) {
            axpy_f32(scores[static_cast<size_t>(h * n_ctx + blk * kBs + j)], buf.data() + j * kHd,
                     out.data() + (g * group + h) * kHd, kHd);
          }
        }
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
}

void BM_Decode_f16(benchmark::State& st) { run(st, kv::KvType::kF16, false); }
void BM_Decode_bf16(benchmark::State& st) { run(st, kv::KvType::kBF16, false); }
void BM_Decode_q8_0(benchmark::State& st) { run(st, kv::KvType::kQ8_0, false); }
void BM_Decode_f32(benchmark::State& st) { run(st, kv::KvType::kF32, false); }
template <kv::KvType T, kernels::Isa I>
void BM_DecodeLayers(benchmark::State& st) {
  run(st, T, false, 28, static_cast<int>(st.range(1)), I);
}
void BM_Prefill512_f16(benchmark::State& st) { run(st, kv::KvType::kF16, true); }
void BM_Prefill512_q8_0(benchmark::State& st) { run(st, kv::KvType::kQ8_0, true); }
BENCHMARK(BM_DecodeOldConvert_f16)->Arg(512)->Arg(2048)->Arg(4096);
BENCHMARK(BM_Decode_f16)->Arg(512)->Arg(2048)->Arg(4096);
BENCHMARK(BM_Decode_bf16)->Arg(512)->Arg(2048)->Arg(4096);
BENCHMARK(BM_Decode_q8_0)->Arg(512)->Arg(2048)->Arg(4096);
BENCHMARK(BM_Decode_f32)->Arg(2048);
BENCHMARK(BM_DecodeLayers<kv::KvType::kF16, kernels::Isa::kAvx512>)->ArgsProduct({{128, 512, 2048, 4096}, {1, 2}})->UseRealTime();
BENCHMARK(BM_DecodeLayers<kv::KvType::kQ8_0, kernels::Isa::kAvx512>)->ArgsProduct({{2048, 4096}, {1, 2}})->UseRealTime();
BENCHMARK(BM_DecodeLayers<kv::KvType::kF16, kernels::Isa::kAvx2>)->ArgsProduct({{2048, 4096}, {1, 2}})->UseRealTime();
BENCHMARK(BM_Prefill512_f16)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Prefill512_q8_0)->Arg(2048)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ridge::backend::cpu

BENCHMARK_MAIN();
