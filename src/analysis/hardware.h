// Datasheet figures of accelerators and machines (with their sources), extensible from a JSON
// file, plus `local`: this machine as `ridge probe` measured it.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/probe.h"
#include "base/status.h"

namespace ridge::analysis {

// The arithmetic a phase runs in; each hardware has one dense peak per precision (0: none).
enum class Precision { kF32, kBF16, kFP8, kINT8 };
std::string_view precision_name(Precision p);
Result<Precision> precision_from_name(std::string_view name);  // "f32", "bf16"/"fp16", "fp8", "int8"

struct Hardware {
  std::string name;          // lookup key: "h100", "local"
  std::string description;   // "NVIDIA H100 SXM5 80 GB"
  std::string kind;          // "gpu", "cpu", "soc"
  double bandwidth_gbs = 0;  // memory bandwidth, GB/s (1e9 bytes/s)
  double f32_tflops = 0;     // dense peaks in TFLOP/s (TOPS for int8); 0 = not available
  double bf16_tflops = 0;    // BF16 (or FP16 with FP32 accumulate) tensor/matrix units
  double fp8_tflops = 0;
  double int8_tops = 0;
  double memory_gb = 0;      // capacity, GB (1e9 bytes)
  std::string source;        // datasheet / document the figures come from

  double bandwidth_bytes_per_s() const { return bandwidth_gbs * 1e9; }
  double peak_flops(Precision p) const;  // FLOP/s; 0 when the hardware has no such units
  // Ridge point: the arithmetic intensity (FLOP/byte) above which a phase is compute-bound.
  double ridge(Precision p) const { return peak_flops(p) / bandwidth_bytes_per_s(); }
  bool is_cpu() const { return kind == "cpu"; }
};

// The built-in table (datasheet figures, dense, no sparsity).
const std::vector<Hardware>& builtin_hardware();

// Reads `{"hardware": [{"name": ..., "bandwidth_gbs": ..., ...}]}` (see docs/roofline.md).
Result<std::vector<Hardware>> load_hardware_file(const std::string& path);
Result<Hardware> hardware_from_json(const nlohmann::json& j, std::string_view where);
nlohmann::json hardware_to_json(const Hardware& hw);

// This machine from probe figures: best measured read bandwidth, peak of each kernel type.
Hardware hardware_from_probe(const ProbeResult& probe);

// Looks a name up (case-insensitive): `extra` (from --hardware-file) first, then the table;
// "local" needs a probe. Aliases: "h100" = h100-sxm, "a100" = a100-80gb-sxm.
Result<Hardware> find_hardware(std::string_view name, const std::vector<Hardware>& extra,
                               const std::optional<ProbeResult>& probe);

}  // namespace ridge::analysis
