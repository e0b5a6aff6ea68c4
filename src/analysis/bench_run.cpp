// Running one bench point: B private sequences on one paged KV cache, prefilled one by one,
// then decoded together, one token per sequence per batched forward.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "analysis/bench.h"
#include "analysis/probe.h"
#include "analysis/read_pass.h"
#include "backend/registry.h"
#include "base/timer.h"
#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/workspace.h"
#include "sampling/argmax.h"

namespace ridge::analysis {
namespace {

constexpr int64_t kBlockSize = 16;

// Nearest-rank percentile of sorted `v` (q in [0, 1]).
double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<size_t>(std::ceil(q * n));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

}  // namespace

void check_roof(BenchPoint& p, const BenchRoof& roof) {
  const double bytes_s = p.step_s > 0 ? p.step.bytes() / p.step_s : 0;
  const double flops_s = p.step_s > 0 ? p.step.flops / p.step_s : 0;
  p.verdict.achieved_bytes_per_s = bytes_s;
  p.verdict.achieved_flops_per_s = flops_s;
  const double bw = roof.bandwidth_bytes_per_s > 0 ? bytes_s / roof.bandwidth_bytes_per_s : 0;
  const double fl = roof.peak_flops > 0 ? flops_s / roof.peak_flops : 0;
  p.miscount = bw > 1.0 || fl > 1.0 || p.verdict.bound == Bound::kMiscount;
  if (!p.miscount) {
    p.bandwidth_fraction = bw;
    p.compute_fraction = fl;
    p.miscount_reason.clear();
    return;
  }
  // Never report a fraction above the roof: the bytes/FLOPs (or the roof) are wrong.
  p.bandwidth_fraction = std::min(bw, 1.0);
  p.compute_fraction = std::min(fl, 1.0);
  p.verdict.bound = Bound::kMiscount;
  if (bw > 1.0) {
    p.miscount_reason = fmt::format(
        "{:.1f} GB/s achieved exceeds the {:.1f} GB/s roof: bytes per step over-counted or the "
        "probe is stale (`ridge probe --force`)",
        bytes_s / 1e9, roof.bandwidth_bytes_per_s / 1e9);
  } else if (fl > 1.0) {
    p.miscount_reason = fmt::format(
        "{:.1f} GFLOP/s achieved exceeds the {:.1f} GFLOP/s peak: FLOPs over-counted or the "
        "probe is stale (`ridge probe --force`)",
        flops_s / 1e9, roof.peak_flops / 1e9);
  } else {
    p.miscount_reason = p.verdict.text;
  }
  p.verdict.text = "miscount: " + p.miscount_reason;
}

Result<BenchPoint> bench_point(const model::Model& model, const model::ModelCost& cost,
                               int64_t batch, int64_t context, const BenchOptions& opt,
                               const BenchRoof& roof, ThreadPool& pool, ReadPass* paired) {
  const model::ModelConfig& cfg = model.config();
  if (batch < 1 || batch > 4096) return usage_error("bench: batch {} is outside 1..4096", batch);
  if (context < 1 || opt.n_decode < 1 || opt.prefill_chunk < 1) {
    return usage_error("bench: context {} and decode steps {} must be at least 1", context,
                       opt.n_decode);
  }
  const int64_t max_ctx = context + opt.n_decode + 1;  // + the untimed warm-up step
  const int64_t per_seq = (max_ctx + kBlockSize - 1) / kBlockSize;
  // The backend first: the KV cache and the workspace are its memory (a GPU's for --device cuda).
  RIDGE_ASSIGN_OR_RETURN(std::unique_ptr<model::Backend> backend,
                         backend::create_backend(opt.backend, {&model.kernels(), &pool, 0, &cfg}));
  RIDGE_RETURN_IF_ERROR(backend->load_weights(model.weights()).with_prefix("bench"));
  model::Backend& be = *backend;
  RIDGE_ASSIGN_OR_RETURN(kv::KvCache kv, kv::KvCache::create(model.kv_config(
                                             per_seq * batch, opt.kv_type, kBlockSize, batch),
                                                             backend->memory()));
  model::WorkspaceLimits lim;
  lim.max_tokens = std::max(batch, std::min(opt.prefill_chunk, context));
  lim.max_outputs = batch;
  lim.max_context = max_ctx;
  lim.n_threads = pool.size();
  lim.block_size = kBlockSize;
  RIDGE_ASSIGN_OR_RETURN(model::Workspace ws, model::Workspace::create(cfg, lim, backend->memory()));

  // Sequence s owns blocks [s * per_seq, (s + 1) * per_seq) and recurrent-state slot s.
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(batch));
  for (int64_t s = 0; s < batch; ++s) {
    for (int64_t i = 0; i < per_seq; ++i) {
      tables[static_cast<size_t>(s)].push_back(static_cast<int32_t>(s * per_seq + i));
    }
  }
  std::mt19937_64 rng(opt.seed);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(cfg.n_vocab - 1));
  std::vector<int32_t> next(static_cast<size_t>(batch));
  model::Batch b;
  BenchPoint p;
  p.batch = batch;
  p.context = context;
  p.n_decode = opt.n_decode;

  // Untimed warm-up: sequence 0's first chunk, as llama.cpp's bench warms up before timing.
  // Without it the timed prefill would include the first touch of every weight page (with
  // --mmap) and of the workspace and KV cache. The chunk's KV rows are rewritten by the timed run.
  {
    const int64_t m = std::min(lim.max_tokens, context);
    b.clear();
    b.add_seq(tables[0], static_cast<int32_t>(m), 0);
    for (int64_t j = 0; j < m; ++j) {
      b.add_token(static_cast<int32_t>(j % cfg.n_vocab), static_cast<int32_t>(j), 0, j == m - 1, kBlockSize);
    }
    RIDGE_RETURN_IF_ERROR(model.forward(b, kv, ws, be).status());
  }

  // Prefill: each sequence's prompt in chunks; its first token comes from the last chunk.
  double prefill_s = 0;
  for (int64_t s = 0; s < batch; ++s) {
    Stopwatch sw;
    for (int64_t i = 0; i < context; i += lim.max_tokens) {
      const int64_t m = std::min(lim.max_tokens, context - i);
      b.clear();
      b.add_seq(tables[static_cast<size_t>(s)], static_cast<int32_t>(i + m), static_cast<int32_t>(s));
      for (int64_t j = 0; j < m; ++j) {
        b.add_token(pick(rng), static_cast<int32_t>(i + j), 0, i + j == context - 1, kBlockSize);
      }
      RIDGE_ASSIGN_OR_RETURN(std::span<const float> logits, model.forward(b, kv, ws, be));
      if (i + m == context) next[static_cast<size_t>(s)] = sampling::argmax(logits);
    }
    prefill_s += sw.seconds();
  }
  p.prompt_tok_s = static_cast<double>(batch * context) / prefill_s;
  p.ttft_ms = 1e3 * prefill_s / static_cast<double>(batch);

  // Decode: one token per sequence per step, one forward for the whole batch. Step 0 is an
  // untimed warm-up (first touch of the workspace and KV pages would dominate the p99).
  std::vector<double> times, passes, fractions;
  std::vector<model::SeqWork> work(static_cast<size_t>(batch));
  model::StepCost total;
  double experts_run = 0;  // summed over timed steps and layers
  for (int64_t step = 0; step <= opt.n_decode; ++step) {
    const int64_t pos = context + step;
    b.clear();
    for (int64_t s = 0; s < batch; ++s) {
      const auto seq = b.add_seq(tables[static_cast<size_t>(s)], static_cast<int32_t>(pos + 1), static_cast<int32_t>(s));
      b.add_token(next[static_cast<size_t>(s)], static_cast<int32_t>(pos), seq, true, kBlockSize);
      work[static_cast<size_t>(s)] = model::SeqWork{pos, 1};
    }
    Stopwatch sw;
    RIDGE_ASSIGN_OR_RETURN(std::span<const float> logits, model.forward(b, kv, ws, be));
    const double seconds = sw.seconds();
    for (int64_t s = 0; s < batch; ++s) {
      next[static_cast<size_t>(s)] =
          sampling::argmax(logits.subspan(static_cast<size_t>(s * cfg.n_vocab), static_cast<size_t>(cfg.n_vocab)));
    }
    if (step == 0) continue;
    times.push_back(seconds);
    // An MoE step counts the experts its router really chose, layer by layer.
    const model::StepCost c = model::cost_of_step(cost, work, ws.moe.experts_run);
    for (int64_t e : ws.moe.experts_run) experts_run += static_cast<double>(e);
    if (paired != nullptr) {
      passes.push_back(paired->run(pool));
      fractions.push_back(passes.back() > 0 ? c.bytes() / seconds / passes.back() : 0);
    }
    total.weight_bytes += c.weight_bytes;
    total.kv_read_bytes += c.kv_read_bytes;
    total.kv_write_bytes += c.kv_write_bytes;
    total.activation_bytes += c.activation_bytes;
    total.flops += c.flops;
    total.attention_flops += c.attention_flops;
    total.state_bytes += c.state_bytes;
  }
  double decode_s = 0;
  for (double t : times) decode_s += t;
  const auto n = static_cast<double>(opt.n_decode);
  p.step = {total.weight_bytes / n,      total.kv_read_bytes / n, total.kv_write_bytes / n,
            total.activation_bytes / n, total.flops / n,         total.attention_flops / n,
            total.state_bytes / n};
  p.step_s = decode_s / n;
  if (cfg.is_moe()) {
    p.experts_measured = experts_run / (n * static_cast<double>(cfg.n_layer));
    p.experts_predicted = model::expected_distinct_experts(cfg.n_expert, cfg.n_expert_used,
                                                           static_cast<double>(batch));
  }
  p.decode_tok_s = static_cast<double>(batch) * n / decode_s;
  p.decode_tok_s_per_seq = n / decode_s;
  p.paired_read_bytes_per_s = probe_median(passes);
  p.paired_fraction = probe_median(fractions);
  std::sort(times.begin(), times.end());
  p.itl_p50_ms = 1e3 * percentile(times, 0.50);
  p.itl_p90_ms = 1e3 * percentile(times, 0.90);
  p.itl_p99_ms = 1e3 * percentile(times, 0.99);
  p.verdict = judge_step(p.step, p.step_s, roof.bandwidth_bytes_per_s, roof.peak_flops);
  check_roof(p, roof);
  return p;
}

}  // namespace ridge::analysis
