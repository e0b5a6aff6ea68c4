#include "analysis/verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace ridge::analysis {
namespace {

std::string dominant_bytes(const model::StepCost& c) {
  const std::array<std::pair<const char*, double>, 4> parts = {{
      {"weights", c.weight_bytes},
      {"KV reads", c.kv_read_bytes},
      {"KV writes", c.kv_write_bytes},
      {"activations", c.activation_bytes},
  }};
  auto best = std::max_element(parts.begin(), parts.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  double total = c.bytes();
  if (total <= 0) return "no bytes counted";
  return fmt::format("{} {:.0f}% of bytes", best->first, 100.0 * best->second / total);
}

std::string dominant_flops(const model::StepCost& c) {
  if (c.flops <= 0) return "no FLOPs counted";
  double att = c.attention_flops / c.flops;
  return att >= 0.5 ? fmt::format("attention {:.0f}% of FLOPs", 100.0 * att)
                    : fmt::format("matmuls {:.0f}% of FLOPs", 100.0 * (1.0 - att));
}

}  // namespace

std::string_view bound_name(Bound b) {
  switch (b) {
    case Bound::kBandwidth: return "bandwidth-bound";
    case Bound::kCompute: return "compute-bound";
    case Bound::kOverhead: return "overhead-bound";
    case Bound::kMiscount: return "miscount";
  }
  return "?";
}

Verdict judge_step(const model::StepCost& cost, double seconds, double bandwidth_bytes_per_s,
                   double peak_flops) {
  Verdict v;
  const double t_mem = bandwidth_bytes_per_s > 0 ? cost.bytes() / bandwidth_bytes_per_s : 0;
  const double t_comp = peak_flops > 0 ? cost.flops / peak_flops : 0;
  const double t_roof = std::max(t_mem, t_comp);
  const bool memory_side = t_mem >= t_comp;
  if (!(seconds > 0) || t_roof <= 0) {
    v.bound = Bound::kOverhead;
    v.text = "overhead-bound (nothing to judge: no time or no cost counted)";
    return v;
  }
  v.achieved_bytes_per_s = cost.bytes() / seconds;
  v.achieved_flops_per_s = cost.flops / seconds;
  v.roof_fraction = t_roof / seconds;
  v.dominant = memory_side ? dominant_bytes(cost) : dominant_flops(cost);
  if (v.roof_fraction > 1.0) {
    v.bound = Bound::kMiscount;
    v.text = fmt::format("miscount: faster than the {} roof allows ({} over-counted, or the "
                         "roof is stale: `ridge probe --force`)",
                         memory_side ? "bandwidth" : "compute", memory_side ? "bytes" : "FLOPs");
    return v;
  }
  if (v.roof_fraction < kExplainedFraction) {
    v.bound = Bound::kOverhead;
    v.text = fmt::format("overhead-bound ({:.0f}% of the time is {}; {})", 100.0 * v.roof_fraction,
                         memory_side ? "moving bytes" : "arithmetic", v.dominant);
    return v;
  }
  v.bound = memory_side ? Bound::kBandwidth : Bound::kCompute;
  v.text = fmt::format("{} ({}), {:.0f}% of roof", bound_name(v.bound), v.dominant,
                       100.0 * v.roof_fraction);
  return v;
}

std::string format_run_summary(double bytes_per_token, double tok_per_s,
                               const std::optional<ProbeResult>& probe, double flops_per_token) {
  const double gbs = bytes_per_token * tok_per_s / 1e9;
  std::string s = fmt::format("decode {:.1f} tok/s · {:.1f} GB/s", tok_per_s, gbs);
  if (!probe || !(probe->read_gbs > 0)) {
    return s + " · run `ridge probe` to measure this machine's bandwidth";
  }
  if (!(tok_per_s > 0)) return s + " · no tokens timed";
  model::StepCost c;
  c.weight_bytes = bytes_per_token;
  c.flops = flops_per_token;
  Verdict v = judge_step(c, 1.0 / tok_per_s, probe->read_gbs * 1e9, std::max(probe->f32_gflops, probe->f32_gflops_1t) * 1e9);
  if (v.bound == Bound::kMiscount) {
    if (gbs > probe->read_gbs) {
      return s + fmt::format(" exceeds the {:.1f} GB/s measured · miscount: bytes per token "
                             "over-counted (or stale probe: `ridge probe --force`)", probe->read_gbs);
    }
    return s + fmt::format(" · {:.1f} GFLOP/s exceeds the {:.1f} GFLOP/s measured · miscount: "
                           "FLOPs per token over-counted", flops_per_token * tok_per_s / 1e9,
                           probe->f32_gflops);
  }
  s += fmt::format(" = {:.0f}% of {:.1f} GB/s measured · ", 100.0 * gbs / probe->read_gbs,
                   probe->read_gbs);
  return s + std::string(bound_name(v.bound));
}

}  // namespace ridge::analysis
