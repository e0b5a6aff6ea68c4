// `ridge bench`: measured prompt and decode speed of a model over a sweep of batch sizes and
// context depths, each decode step judged against this machine's probed roof with the same cost
// model as `ridge roofline` (model/cost.h) and the same verdict as `ridge run` (verdict.h).
//
// A point (batch B, context C): B sequences each get a prompt of C tokens (prefilled one after the
// other, in chunks), then one untimed warm-up step and n_decode timed steps decode one token per
// sequence through ONE batched forward per step. Every step's bytes and FLOPs come from cost_of_step over the B sequences;
// the point's verdict judges the sum of the steps' costs against the sum of their times.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/verdict.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "model/cost.h"
#include "model/model.h"

namespace ridge::analysis {

struct BenchOptions {
  std::vector<int64_t> batches{1};     // concurrent sequences per decode step
  std::vector<int64_t> contexts{128};  // prompt tokens per sequence before decoding
  int64_t n_decode = 32;               // decode steps per point
  int64_t prefill_chunk = 256;         // prompt tokens per forward
  kv::KvType kv_type = kv::KvType::kF16;
  uint64_t seed = 1;                   // prompt token ids
  std::string backend = "cpu";         // the backend the forward runs on (backend/registry.h)
};

// The machine's roof as the bench judges against it (0 = unknown).
struct BenchRoof {
  double bandwidth_bytes_per_s = 0;
  double peak_flops = 0;
  std::string source;  // "ridge probe (cached, 2026-...)", "none"
};

struct BenchPoint {
  int64_t batch = 0;
  int64_t context = 0;
  int64_t n_decode = 0;
  double prompt_tok_s = 0;     // all prompt tokens / prefill time
  double ttft_ms = 0;          // mean over sequences: its prefill time (logits of token 1)
  double decode_tok_s = 0;     // all sequences: batch * steps / decode time
  double decode_tok_s_per_seq = 0;
  double itl_p50_ms = 0, itl_p90_ms = 0, itl_p99_ms = 0;  // decode step times
  model::StepCost step;        // mean decode step cost
  double step_s = 0;           // mean decode step time
  Verdict verdict;
  double bandwidth_fraction = 0;  // achieved bytes/s over the roof (valid unless miscount)
  double compute_fraction = 0;    // achieved FLOP/s over the peak
  bool miscount = false;          // a fraction came out above 1: the accounting is wrong
  std::string miscount_reason;
  // With a paired probe (bench_point's `paired`): a read pass ran after every timed step.
  double paired_read_bytes_per_s = 0;  // median of those passes (0: not run)
  double paired_fraction = 0;  // median over steps of the step's bytes/s over its pass's
  // Mixture of experts: distinct experts read per layer and decode step, as the router chose
  // them (the step's bytes count these) and as uniform routing predicts; 0 for dense models.
  double experts_measured = 0;
  double experts_predicted = 0;
};

// Fills the fractions of `p` from its verdict and the roof, and flags a miscount (never a
// fraction above 1) when the achieved bytes/s or FLOP/s exceed the roof.
void check_roof(BenchPoint& p, const BenchRoof& roof);

// Writes a synthetic model "PRESET:TYPE" (TYPE a ggml type or a llama.cpp mixture) to `path`.
Status write_synthetic_model(std::string_view spec, const std::string& path, int n_threads);

// The roof from `ridge probe` figures: best read bandwidth, the peak of the precision ridge's
// kernels run `main_type` in (f32 FMA, bf16 dot, int8 dot).
BenchRoof roof_from_probe(const ProbeResult& probe, GgmlType main_type);

class ReadPass;

// Runs one point on `model` (its KV cache and workspace are allocated for the point). With
// `paired`, one read pass runs on `pool` after every timed decode step (untimed as far as the
// step is concerned) and each step is judged against the bandwidth read right after it.
Result<BenchPoint> bench_point(const model::Model& model, const model::ModelCost& cost,
                               int64_t batch, int64_t context, const BenchOptions& opt,
                               const BenchRoof& roof, ThreadPool& pool,
                               ReadPass* paired = nullptr);

// "0.6 GB", "41.0 GB/s" style helpers and the three output formats.
struct BenchReport {
  std::string model;        // file name or "synthetic tiny-qwen3:f32"
  std::string weight_type;  // "f32", "q8_0", "file"
  std::string isa;
  std::string weights_memory;  // "huge pages" or "mapped" (gguf::Backing of the loaded file)
  int n_threads = 0;
  double load_avg = 0;      // 1-minute load average when the bench started
  double weight_read_bytes = 0;
  BenchRoof roof;
  std::string paired_loop;  // the read pass's loop with --paired-probe, else empty
  std::vector<BenchPoint> points;
};

// Compares the same shape in two weight types: speed ratio against byte ratio per point.
struct TypeComparison {
  int64_t batch = 0, context = 0;
  double speed_ratio = 0;  // decode tok/s of b over a
  double byte_ratio = 0;   // bytes per step of a over b
  std::string verdict;     // "bandwidth-bound: the speed ratio tracks the byte ratio" ...
};
std::vector<TypeComparison> compare_types(const BenchReport& a, const BenchReport& b);

std::string format_bench_table(const BenchReport& r);
std::string format_bench_csv(const std::vector<BenchReport>& reports);
nlohmann::json bench_to_json(const std::vector<BenchReport>& reports,
                             const std::vector<TypeComparison>& comparisons);
// Charts against batch size, one series per (report, context): decode tok/s with the roofline
// ceiling and the knee, achieved GB/s under the probed bandwidth, ITL p50/p99, % of the roof.
std::string bench_svg(const std::vector<BenchReport>& reports);
std::string format_comparison(const BenchReport& a, const BenchReport& b,
                              const std::vector<TypeComparison>& c);

}  // namespace ridge::analysis
