// Judging a measured step against the machine's roof: what bound it, what dominated, and the
// one-line summary printed at the end of every `ridge run`. Never reports more than 100% of a
// roof: a faster-than-roof measurement means the bytes (or FLOPs) were miscounted.
#pragma once

#include <optional>
#include <string>

#include "analysis/hardware.h"
#include "analysis/probe.h"
#include "model/cost.h"

namespace ridge::analysis {

enum class Bound {
  kBandwidth,  // the time is mostly explained by bytes / bandwidth
  kCompute,    // ... by FLOPs / peak
  kOverhead,   // less than kExplainedFraction of the time is explained by either
  kMiscount,   // faster than the roof allows: the accounting is wrong
};
std::string_view bound_name(Bound b);  // "bandwidth-bound", ...

// A step whose roof time is below this fraction of its measured time is overhead-bound.
inline constexpr double kExplainedFraction = 0.5;

struct Verdict {
  Bound bound = Bound::kOverhead;
  double roof_fraction = 0;     // roof time / measured time, in [0, 1] unless kMiscount
  double achieved_bytes_per_s = 0;
  double achieved_flops_per_s = 0;
  std::string dominant;         // "weights 93% of bytes", "attention 41% of FLOPs"
  std::string text;             // "bandwidth-bound (weights 93% of bytes), 74% of roof"
};

// Judges one step (or an average step) of `cost` that took `seconds` on a machine with the
// given bandwidth (bytes/s) and peak (FLOP/s; 0 = unknown, compute then never binds).
Verdict judge_step(const model::StepCost& cost, double seconds, double bandwidth_bytes_per_s,
                   double peak_flops);

// "decode 47.9 tok/s · 30.4 GB/s = 74% of 41.0 GB/s measured · bandwidth-bound".
// Without a probe: "... · run `ridge probe` to measure this machine's bandwidth".
// With flops_per_token > 0 the probe's f32 peak is used to tell compute-bound steps apart.
std::string format_run_summary(double bytes_per_token, double tok_per_s,
                               const std::optional<ProbeResult>& probe,
                               double flops_per_token = 0);

}  // namespace ridge::analysis
