// Bench inputs: synthetic models written on demand and the roof from the probe.
#include <fmt/format.h>

#include "analysis/bench.h"
#include "analysis/hardware.h"
#include "analysis/roofline.h"
#include "gguf/writer.h"
#include "offline/presets.h"
#include "offline/quant_mix.h"
#include "offline/synth.h"

namespace ridge::analysis {

Status write_synthetic_model(std::string_view spec, const std::string& path, int n_threads) {
  const size_t colon = spec.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == spec.size()) {
    return usage_error("--synthetic must be PRESET:TYPE (e.g. tiny-qwen3:f32), got '{}'", spec);
  }
  const std::string_view preset = spec.substr(0, colon);
  const std::string_view type_name = spec.substr(colon + 1);
  offline::SynthOptions opt;
  opt.n_threads = n_threads;
  if (auto t = ggml_type_from_name(type_name)) {
    opt.type = *t;
  } else {
    auto mix = offline::quant_mix_from_name(type_name);
    if (!mix.ok()) return usage_error("--synthetic: unknown weight type '{}'", type_name);
    opt.mix = *mix;
    opt.type = offline::quant_mix_info(*mix).base;
  }
  RIDGE_ASSIGN_OR_RETURN(model::ModelConfig cfg, offline::preset_config(preset));
  gguf::Writer w;
  RIDGE_ASSIGN_OR_RETURN(model::ModelConfig effective, offline::build_synthetic_model(cfg, opt, w));
  (void)effective;
  return w.write(path);
}

BenchRoof roof_from_probe(const ProbeResult& probe, GgmlType main_type) {
  const Hardware hw = hardware_from_probe(probe);
  BenchRoof roof;
  roof.bandwidth_bytes_per_s = hw.bandwidth_bytes_per_s();
  auto prec = choose_precision(hw, main_type, std::nullopt);
  roof.peak_flops = prec.ok() ? hw.peak_flops(*prec) : 0;
  roof.source = fmt::format("ridge probe of {}, {}{}", probe.measured_at,
                            prec.ok() ? precision_name(*prec) : "no", " peak");
  if (probe_was_busy(probe)) roof.source += ", measured while busy";
  return roof;
}

}  // namespace ridge::analysis
