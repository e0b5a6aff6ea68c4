#include "analysis/roofline.h"

#include <algorithm>
#include <cmath>

namespace ridge::analysis {
namespace {

bool is_float_type(GgmlType t) {
  return t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16;
}

// The ceiling of a step: max(memory time, compute time).
double step_seconds(const model::StepCost& c, double bw, double peak) {
  return std::max(c.bytes() / bw, peak > 0 ? c.flops / peak : 0.0);
}

// Batches scanned for the MoE / dense comparison.
constexpr int64_t kMaxScanBatch = 65536;

MoeComparison compare_with_dense(const model::ModelCost& m, int64_t context, double bw, double peak) {
  MoeComparison c;
  c.n_expert = m.config.n_expert;
  c.n_expert_used = m.config.n_expert_used;
  c.n_active_params = m.n_active_params;
  c.active_weight_bytes = m.active_weight_bytes;
  c.expert_bytes_all_layers = m.expert_bytes_all_layers;
  c.dense_read_bytes = m.weight_bytes_for_experts(static_cast<double>(m.config.n_expert));
  c.dense_flops_per_token = model::dense_equivalent_step(m, 1, context).flops;
  const double f = MoeComparison::kParityFraction;
  const int64_t e = m.config.n_expert, k = m.config.n_expert_used;
  for (int64_t b = 1; b <= kMaxScanBatch && !c.weight_parity_batch; ++b) {
    const double experts = model::expected_distinct_experts(e, k, static_cast<double>(b));
    if (m.weight_bytes_for_experts(experts) >= f * c.dense_read_bytes) c.weight_parity_batch = b;
  }
  // The step ratio rises while both are memory-bound (the MoE reads more experts per step) and
  // falls again once the dense model's arithmetic dominates: scan for both crossings.
  for (int64_t b = 1; b <= kMaxScanBatch; ++b) {
    const double moe = step_seconds(model::cost_of_step(m, b, context), bw, peak);
    const double dense = step_seconds(model::dense_equivalent_step(m, b, context), bw, peak);
    const bool close = moe >= f * dense;
    if (!c.step_parity_batch && close) {
      c.step_parity_batch = b;
    } else if (c.step_parity_batch && !close) {
      c.step_parity_end_batch = b;
      break;
    }
  }
  return c;
}

}  // namespace

Result<Precision> choose_precision(const Hardware& hw, GgmlType main_type,
                                   std::optional<Precision> forced) {
  if (forced) {
    if (hw.peak_flops(*forced) <= 0) {
      return usage_error("hardware '{}' has no {} figure (use --compute with one it has)", hw.name,
                         precision_name(*forced));
    }
    return *forced;
  }
  Precision p = Precision::kBF16;
  if (hw.is_cpu()) {
    if (main_type == GgmlType::kBF16 && hw.bf16_tflops > 0) {
      p = Precision::kBF16;
    } else if (!is_float_type(main_type) && hw.int8_tops > 0) {
      p = Precision::kINT8;
    } else {
      p = Precision::kF32;
    }
  } else if (hw.bf16_tflops <= 0) {
    p = Precision::kF32;
  }
  if (hw.peak_flops(p) <= 0) {
    return error("hardware '{}' has no {} peak to compare with", hw.name, precision_name(p));
  }
  return p;
}

PhasePoint evaluate_phase(std::string phase, int64_t batch, int64_t n_tokens,
                          const model::StepCost& cost, const Hardware& hw, double peak_flops) {
  PhasePoint p;
  p.phase = std::move(phase);
  p.batch = batch;
  p.n_tokens = n_tokens;
  p.cost = cost;
  p.intensity = cost.intensity();
  p.t_memory_s = cost.bytes() / hw.bandwidth_bytes_per_s();
  p.t_compute_s = peak_flops > 0 ? cost.flops / peak_flops : 0;
  p.step_s = std::max(p.t_memory_s, p.t_compute_s);
  p.compute_bound = p.t_compute_s > p.t_memory_s;
  p.attainable_flops = std::min(peak_flops, hw.bandwidth_bytes_per_s() * p.intensity);
  if (p.step_s > 0) {
    p.tok_s_total = static_cast<double>(n_tokens) / p.step_s;
    p.tok_s_per_seq = p.tok_s_total / static_cast<double>(std::max<int64_t>(batch, 1));
  }
  return p;
}

Result<RooflineResult> analyze(const RooflineQuery& q) {
  if (q.context < 1) return usage_error("context must be >= 1, got {}", q.context);
  for (int64_t b : q.batches) {
    if (b < 1) return usage_error("batch sizes must be >= 1, got {}", b);
  }
  if (!(q.hw.bandwidth_gbs > 0)) return error("hardware '{}' has no memory bandwidth", q.hw.name);
  RIDGE_ASSIGN_OR_RETURN(Precision prec, choose_precision(q.hw, q.main_type, q.precision));
  const model::ModelCost& m = q.cost;
  RooflineResult r;
  r.model = m.config.name;
  r.weight_type = q.weight_type;
  r.kv_type = std::string(kv::kv_type_name(m.kv_type));
  r.hw = q.hw;
  r.precision = prec;
  r.context = q.context;
  r.n_params = m.n_params;
  r.weight_file_bytes = m.weight_file_bytes;
  r.weight_read_bytes = m.weight_read_bytes;
  r.kv_bytes_per_token = m.kv_bytes_per_token;
  r.kv_bytes_at_context = m.kv_bytes_kept(q.context);
  r.kv_bytes_full_at_context = m.kv_bytes_per_token * static_cast<double>(q.context);
  r.kv_window_bytes_per_token = m.kv_store_window;
  r.window = m.window;
  r.n_window_layers = m.n_window_layers;
  r.state_bytes_per_seq = m.state_bytes_per_seq;
  r.flops_per_token = m.flops_per_token(q.context);
  r.attention_flops_per_token = m.attention_flops(static_cast<double>(std::max<int64_t>(q.context - 1, 0)), 1.0);
  r.peak_flops = q.hw.peak_flops(prec);
  r.ridge = q.hw.ridge(prec);

  if (q.hw.memory_gb > 0) {
    double free_bytes = q.hw.memory_gb * 1e9 - m.weight_file_bytes;
    r.weights_fit = free_bytes > 0;
    const double per_seq = r.kv_bytes_at_context + r.state_bytes_per_seq;
    r.max_sequences = r.weights_fit ? static_cast<int64_t>(std::floor(free_bytes / per_seq)) : 0;
  }
  const int64_t n_prompt = q.prefill_tokens > 0 ? q.prefill_tokens : q.context;
  const double bw = q.hw.bandwidth_bytes_per_s();
  const auto& cfg = m.config;
  const model::SeqWork prompt{0, n_prompt};
  r.prefill = evaluate_phase("prefill", 1, n_prompt, model::cost_of_prefill(m, n_prompt), q.hw, r.peak_flops);
  r.prefill.fits = r.max_sequences < 0 || r.max_sequences >= 1;
  if (m.is_moe()) {
    r.prefill.experts_per_layer =
        model::expected_distinct_experts(cfg.n_expert, cfg.n_expert_used, static_cast<double>(n_prompt));
    r.prefill.dense_step_s =
        step_seconds(model::dense_equivalent_step(m, std::span(&prompt, 1)), bw, r.peak_flops);
  }
  for (int64_t b : q.batches) {
    PhasePoint p = evaluate_phase("decode", b, b, model::cost_of_step(m, b, q.context), q.hw, r.peak_flops);
    p.fits = r.max_sequences < 0 || b <= r.max_sequences;
    if (m.is_moe()) {
      p.experts_per_layer = model::expected_distinct_experts(cfg.n_expert, cfg.n_expert_used, static_cast<double>(b));
      p.dense_step_s = step_seconds(model::dense_equivalent_step(m, b, q.context), bw, r.peak_flops);
    }
    r.decode.push_back(std::move(p));
  }
  if (!m.is_moe()) {
    // Decode step time is linear in B on both sides: memory (W + B*K)/bw, compute B*F/peak.
    // The knee is the smallest B where B*(F/peak - K/bw) >= W/bw; none if F/peak <= K/bw (the
    // per-sequence KV traffic alone outweighs its arithmetic: batching never makes it compute-bound).
    model::StepCost one = model::cost_of_step(m, 1, q.context);
    const double per_seq_bytes = one.bytes() - m.weight_read_bytes;
    const double gain = one.flops / r.peak_flops - per_seq_bytes / bw;
    if (gain > 0) {
      double b = std::ceil((m.weight_read_bytes / bw) / gain);
      if (b < 1e15) r.knee_batch = std::max<int64_t>(1, static_cast<int64_t>(b));
    }
    return r;
  }
  // An MoE's weight bytes grow with B (more distinct experts): memory time is concave in B,
  // compute time linear, so compute - memory is convex and negative at B = 0: the compute-bound
  // batches are one interval [knee, inf), found by bisection.
  auto compute_bound = [&](int64_t b) {
    const model::StepCost c = model::cost_of_step(m, b, q.context);
    return c.flops / r.peak_flops > c.bytes() / bw;
  };
  int64_t hi = int64_t{1} << 40;
  if (compute_bound(hi)) {
    int64_t lo = 0;  // not compute-bound (no step at all)
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (compute_bound(mid) ? hi : lo) = mid;
    }
    r.knee_batch = hi;
  }
  r.moe = compare_with_dense(m, q.context, bw, r.peak_flops);
  return r;
}

}  // namespace ridge::analysis
