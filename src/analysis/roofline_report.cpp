// Terminal tables and the stable JSON form of roofline results (schema: docs/roofline.md).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "analysis/roofline.h"

namespace ridge::analysis {
namespace {

std::string bytes_str(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} KB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

std::string flops_str(double f) {
  if (f >= 1e12) return fmt::format("{:.2f} T", f / 1e12);
  if (f >= 1e9) return fmt::format("{:.2f} G", f / 1e9);
  return fmt::format("{:.1f} M", f / 1e6);
}

std::string tok_s_str(double t) {
  if (t >= 1e5) return fmt::format("{:.3g}", t);
  return fmt::format("{:.1f}", t);
}

nlohmann::json cost_json(const model::StepCost& c) {
  return {{"weight_bytes", c.weight_bytes},
          {"kv_read_bytes", c.kv_read_bytes},
          {"kv_write_bytes", c.kv_write_bytes},
          {"activation_bytes", c.activation_bytes},
          {"state_bytes", c.state_bytes},
          {"bytes", c.bytes()},
          {"flops", c.flops},
          {"attention_flops", c.attention_flops}};
}

std::string params_str(double n) {
  return n >= 1e9 ? fmt::format("{:.3g} B", n / 1e9) : fmt::format("{:.3g} M", n / 1e6);
}

nlohmann::json phase_json(const PhasePoint& p, bool moe) {
  nlohmann::json j = {{"phase", p.phase},
          {"batch", p.batch},
          {"tokens", p.n_tokens},
          {"cost", cost_json(p.cost)},
          {"intensity_flop_per_byte", p.intensity},
          {"memory_time_ms", p.t_memory_s * 1e3},
          {"compute_time_ms", p.t_compute_s * 1e3},
          {"step_ms", p.step_s * 1e3},
          {"bound", p.compute_bound ? "compute" : "memory"},
          {"attainable_flops_per_s", p.attainable_flops},
          {"tok_s_per_sequence", p.tok_s_per_seq},
          {"tok_s_total", p.tok_s_total},
          {"fits_in_memory", p.fits}};
  if (moe) {
    j["experts_per_layer"] = p.experts_per_layer;
    j["dense_equivalent_step_ms"] = p.dense_step_s * 1e3;
    j["step_vs_dense"] = p.dense_step_s > 0 ? p.step_s / p.dense_step_s : 0.0;
  }
  return j;
}


}  // namespace

std::string format_roofline(const RooflineResult& r) {
  std::string s = fmt::format(
      "{} · {} weights · {} KV · ctx {} · {} ({}) · {:.0f} GB/s · {} {:.4g} TFLOP/s · ridge {:.1f} "
      "FLOP/byte\n",
      r.model, r.weight_type, r.kv_type, r.context, r.hw.name, r.hw.description, r.hw.bandwidth_gbs,
      precision_name(r.precision), r.peak_flops / 1e12, r.ridge);
  s += fmt::format("  weights {} stored, {} read per step{} · {} params\n", bytes_str(r.weight_file_bytes),
                   bytes_str(r.weight_read_bytes), r.moe ? " of one sequence" : "", params_str(r.n_params));
  if (r.moe) {
    const MoeComparison& m = *r.moe;
    s += fmt::format("  experts: {} of {} per token and layer · {} params active of {} · {} active of {} "
                     "stored · {} per expert (all layers)\n",
                     m.n_expert_used, m.n_expert, params_str(m.n_active_params), params_str(r.n_params),
                     bytes_str(m.active_weight_bytes), bytes_str(r.weight_file_bytes),
                     bytes_str(m.expert_bytes_all_layers));
  }
  if (r.kv_window_bytes_per_token > 0 && r.kv_window_bytes_per_token < r.kv_bytes_per_token) {
    s += fmt::format("  KV {} per token ({} in the {} sliding-window layers, which keep their last {}) · {} per "
                     "sequence at ctx {} ({} keeping every position: --swa-full)\n",
                     bytes_str(r.kv_bytes_per_token), bytes_str(r.kv_window_bytes_per_token), r.n_window_layers,
                     r.window, bytes_str(r.kv_bytes_at_context), r.context, bytes_str(r.kv_bytes_full_at_context));
  } else {
    s += fmt::format("  KV {} per token · {} per sequence at ctx {}\n", bytes_str(r.kv_bytes_per_token),
                     bytes_str(r.kv_bytes_at_context), r.context);
  }
  if (r.state_bytes_per_seq > 0) {
    s += fmt::format("  recurrent state {} per sequence (linear-attention layers, any context; read and "
                     "written every step)\n", bytes_str(r.state_bytes_per_seq));
  }
  s += fmt::format("  FLOPs per token {}FLOP at ctx {} (attention {:.1f}%)\n", flops_str(r.flops_per_token),
                   r.context, 100.0 * r.attention_flops_per_token / r.flops_per_token);
  if (r.max_sequences >= 0) {
    s += r.weights_fit
             ? fmt::format("  memory {:.0f} GB: weights + KV{} fit {} sequences of {} tokens\n",
                           r.hw.memory_gb, r.state_bytes_per_seq > 0 ? " + state" : "", r.max_sequences, r.context)
             : fmt::format("  memory {:.0f} GB: the weights alone do not fit\n", r.hw.memory_gb);
  }
  // An MoE adds: the distinct experts read per layer, the weights read, and the step's ceiling
  // against a dense model of the same total size.
  const std::string moe_head =
      r.moe ? fmt::format(" {:>8} {:>10} {:>8}", "experts", "weights", "x dense") : std::string();
  s += fmt::format("  {:<8} {:>6} {:>10} {:>8} {:>10} {:>10} {:>10} {:>10} {:>12}{}  {}\n", "phase",
                   "batch", "FLOP/byte", "bound", "mem ms", "math ms", "step ms", "tok/s/seq",
                   "tok/s total", moe_head, "");
  auto row = [&s, &r](const PhasePoint& p) {
    const std::string moe_cols =
        r.moe ? fmt::format(" {:>8.1f} {:>10} {:>8.2f}", p.experts_per_layer, bytes_str(p.cost.weight_bytes),
                            p.dense_step_s > 0 ? p.step_s / p.dense_step_s : 0.0)
              : std::string();
    s += fmt::format("  {:<8} {:>6} {:>10.1f} {:>8} {:>10.3f} {:>10.3f} {:>10.3f} {:>10} {:>12}{}  {}\n",
                     p.phase, p.phase == "prefill" ? p.n_tokens : p.batch, p.intensity,
                     p.compute_bound ? "compute" : "memory", p.t_memory_s * 1e3, p.t_compute_s * 1e3,
                     p.step_s * 1e3,
                     p.phase == "prefill" ? "-" : tok_s_str(p.tok_s_per_seq), tok_s_str(p.tok_s_total), moe_cols,
                     p.fits ? "" : "(does not fit)");
  };
  row(r.prefill);
  for (const auto& p : r.decode) row(p);
  if (r.knee_batch) {
    s += fmt::format("  knee: decode turns compute-bound at batch {}\n", *r.knee_batch);
  } else {
    s += fmt::format("  knee: none: at ctx {} each sequence's KV reads outweigh its arithmetic, so "
                     "decode stays memory-bound at any batch\n", r.context);
  }
  if (r.moe) {
    const MoeComparison& m = *r.moe;
    s += fmt::format("  vs dense: a dense model of the same size ({} params) reads {} per step and computes "
                     "{}FLOP per token at ctx {}.\n", params_str(r.n_params), bytes_str(m.dense_read_bytes),
                     flops_str(m.dense_flops_per_token), r.context);
    const int pct = static_cast<int>(std::lround(100 * MoeComparison::kParityFraction));
    if (m.weight_parity_batch) {
      s += fmt::format("  the MoE stops being cheaper in weight reads at batch {}: {:.0f} of {} experts per layer, "
                       "{}% of the dense model's bytes\n", *m.weight_parity_batch,
                       model::expected_distinct_experts(m.n_expert, m.n_expert_used,
                                                        static_cast<double>(*m.weight_parity_batch)),
                       m.n_expert, pct);
    }
    if (m.step_parity_batch) {
      s += fmt::format("  its decode step (KV, arithmetic included) costs >= {}% of the dense model's from batch {}{}\n",
                       pct, *m.step_parity_batch,
                       m.step_parity_end_batch
                           ? fmt::format(" to {}, where the dense model's arithmetic makes it slower again",
                                         *m.step_parity_end_batch - 1)
                           : std::string());
    } else {
      s += fmt::format("  its decode step (KV, arithmetic included) stays below {}% of the dense model's at every "
                       "batch up to 65536 (column x dense)\n", pct);
    }
  }
  return s;
}

nlohmann::json roofline_to_json(const std::vector<RooflineResult>& results) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json decode = nlohmann::json::array();
    const bool moe = r.moe.has_value();
    for (const auto& p : r.decode) decode.push_back(phase_json(p, moe));
    arr.push_back({
        {"model", r.model},
        {"weight_type", r.weight_type},
        {"kv_type", r.kv_type},
        {"hardware", hardware_to_json(r.hw)},
        {"precision", precision_name(r.precision)},
        {"context", r.context},
        {"n_params", r.n_params},
        {"weight_file_bytes", r.weight_file_bytes},
        {"weight_read_bytes", r.weight_read_bytes},
        {"kv_bytes_per_token", r.kv_bytes_per_token},
        {"state_bytes_per_sequence", r.state_bytes_per_seq},
        {"kv_bytes_at_context", r.kv_bytes_at_context},
        {"kv_bytes_full_at_context", r.kv_bytes_full_at_context},
        {"flops_per_token", r.flops_per_token},
        {"attention_flops_per_token", r.attention_flops_per_token},
        {"peak_flops_per_s", r.peak_flops},
        {"ridge_flop_per_byte", r.ridge},
        {"prefill", phase_json(r.prefill, moe)},
        {"decode", decode},
        {"knee_batch", r.knee_batch ? nlohmann::json(*r.knee_batch) : nlohmann::json(nullptr)},
        {"memory", {{"capacity_bytes", r.hw.memory_gb * 1e9},
                    {"weights_fit", r.weights_fit},
                    {"max_sequences", r.max_sequences}}},
    });
    if (moe) {
      const MoeComparison& m = *r.moe;
      auto opt = [](const std::optional<int64_t>& b) { return b ? nlohmann::json(*b) : nlohmann::json(nullptr); };
      arr.back()["moe"] = {{"n_expert", m.n_expert},
                           {"n_expert_used", m.n_expert_used},
                           {"n_active_params", m.n_active_params},
                           {"active_weight_bytes", m.active_weight_bytes},
                           {"expert_bytes_all_layers", m.expert_bytes_all_layers},
                           {"dense_equivalent_read_bytes", m.dense_read_bytes},
                           {"dense_equivalent_flops_per_token", m.dense_flops_per_token},
                           {"parity_fraction", MoeComparison::kParityFraction},
                           {"weight_parity_batch", opt(m.weight_parity_batch)},
                           {"step_parity_batch", opt(m.step_parity_batch)},
                           {"step_parity_end_batch", opt(m.step_parity_end_batch)}};
    }
  }
  return {{"schema", "ridge.roofline/1"}, {"results", arr}};
}

}  // namespace ridge::analysis
