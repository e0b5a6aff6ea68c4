// The roofline of a model on a machine: per weight type, KV type, hardware and context, what
// bounds prefill and decode, the decode ceilings per batch size, the knee batch size where
// decode turns compute-bound, and how many sequences fit in memory. For a mixture of experts,
// also the experts each step reads and the comparison with a dense model of the same total size.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/hardware.h"
#include "model/cost.h"

namespace ridge::analysis {

struct RooflineQuery {
  model::ModelCost cost;           // the model with its weight types and KV type
  std::string weight_type;         // label: "bf16", "q4_k_m", "file"
  GgmlType main_type = GgmlType::kF16;  // type of the bulk of the matrices (picks the precision)
  Hardware hw;
  std::optional<Precision> precision;   // nullopt: choose_precision
  int64_t context = 4096;               // tokens attended per sequence at decode
  std::vector<int64_t> batches = {1};   // decode batch sizes
  int64_t prefill_tokens = 0;           // prompt length of the prefill phase; 0 = context
};

struct PhasePoint {
  std::string phase;       // "prefill" or "decode"
  int64_t batch = 1;       // sequences in the step
  int64_t n_tokens = 1;    // tokens the step processes
  model::StepCost cost;
  double intensity = 0;    // FLOP/byte
  double t_memory_s = 0;   // bytes / bandwidth
  double t_compute_s = 0;  // FLOPs / peak
  double step_s = 0;       // the ceiling: max of the two
  bool compute_bound = false;
  double attainable_flops = 0;  // min(peak, bandwidth * intensity)
  double tok_s_per_seq = 0;     // decode: 1 / step; prefill: tokens / step
  double tok_s_total = 0;       // all sequences together
  bool fits = true;             // weights + this many sequences' KV fit in memory
  // Mixture of experts only (0 when dense):
  double experts_per_layer = 0;  // expected distinct experts read per layer in this step
  double dense_step_s = 0;       // ceiling of the same step on a dense model of the same total size
};

// A mixture-of-experts model against a dense model of the same total size (every expert applied
// to every token, every weight read every step).
struct MoeComparison {
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  double n_active_params = 0;
  double active_weight_bytes = 0;
  double expert_bytes_all_layers = 0;  // one expert in every layer
  double dense_read_bytes = 0;         // the dense model's weights read per step
  double dense_flops_per_token = 0;    // at the context
  // Where the MoE stops being cheaper. Its weight reads grow with the batch towards the dense
  // model's: weight_parity_batch is the first batch whose experts (E (1 - (1 - k/E)^B) per layer)
  // bring them to kParityFraction of the dense model's. The decode step's ceiling (KV and
  // arithmetic included) reaches that fraction of the dense step's at step_parity_batch (nullopt:
  // not up to 65536 sequences), until step_parity_end_batch, where the dense model's arithmetic
  // makes it slower again (nullopt: not up to 65536).
  static constexpr double kParityFraction = 0.9;
  std::optional<int64_t> weight_parity_batch;
  std::optional<int64_t> step_parity_batch;
  std::optional<int64_t> step_parity_end_batch;
};

struct RooflineResult {
  std::string model;
  std::string weight_type;
  std::string kv_type;
  Hardware hw;
  Precision precision = Precision::kBF16;
  int64_t context = 0;
  double n_params = 0;
  double weight_file_bytes = 0;
  double weight_read_bytes = 0;     // per decode step
  double kv_bytes_per_token = 0;
  double kv_bytes_at_context = 0;   // one sequence (sliding-window layers: their window only)
  double kv_bytes_full_at_context = 0;  // the same with every position in every layer (--swa-full)
  double kv_window_bytes_per_token = 0;  // of kv_bytes_per_token, the sliding-window layers'
  int64_t window = 0;
  int64_t n_window_layers = 0;
  double state_bytes_per_seq = 0;   // recurrent state of one sequence (hybrid models), any context
  double flops_per_token = 0;       // at `context`, attention included
  double attention_flops_per_token = 0;
  double peak_flops = 0;
  double ridge = 0;                 // FLOP/byte
  PhasePoint prefill;
  std::vector<PhasePoint> decode;
  std::optional<int64_t> knee_batch;  // smallest compute-bound decode batch; nullopt: never
  int64_t max_sequences = -1;         // sequences of `context` that fit; -1: capacity unknown
  bool weights_fit = true;
  std::optional<MoeComparison> moe;   // set for a mixture-of-experts model
};

// The precision a phase runs in: CPUs run f16/f32 weights in f32 FMA, bf16 in bf16 dot and
// quantized weights in int8 dot (ridge's kernels); GPUs run matmuls in bf16/fp16 tensor cores.
// A forced precision must have a non-zero peak on `hw`.
Result<Precision> choose_precision(const Hardware& hw, GgmlType main_type,
                                   std::optional<Precision> forced);

Result<RooflineResult> analyze(const RooflineQuery& q);

// Evaluates a step of `cost` on `hw` at `peak_flops`.
PhasePoint evaluate_phase(std::string phase, int64_t batch, int64_t n_tokens,
                          const model::StepCost& cost, const Hardware& hw, double peak_flops);

// Text tables (terminal), stable JSON (docs/roofline.md), hand-written SVG charts.
std::string format_roofline(const RooflineResult& r);
nlohmann::json roofline_to_json(const std::vector<RooflineResult>& results);
std::string roofline_svg(const std::vector<RooflineResult>& results);

}  // namespace ridge::analysis
