#include "analysis/hardware.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "analysis/probe.h"

namespace ridge::analysis {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Dense (no 2:4 sparsity) figures. Where a datasheet only gives "with sparsity" numbers, the
// dense figure is half of it; "derived" marks figures computed rather than read.
std::vector<Hardware> build_table() {
  std::vector<Hardware> t;
  // name, description, kind, GB/s, f32, bf16, fp8, int8, GB, source
  t.push_back({"h100-sxm", "NVIDIA H100 SXM5 80 GB", "gpu", 3350, 67, 989, 1979, 1979, 80,
               "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100), SXM "
               "column, sparse figures halved"});
  t.push_back({"h200", "NVIDIA H200 SXM 141 GB", "gpu", 4800, 67, 989, 1979, 1979, 141,
               "NVIDIA H200 datasheet (nvidia.com/en-us/data-center/h200), SXM column, sparse "
               "figures halved"});
  t.push_back({"b200", "NVIDIA B200 (HGX B200, per GPU)", "gpu", 8000, 75, 2250, 4500, 4500, 180,
               "NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx): 8-GPU totals "
               "divided by 8, sparse figures halved; the issue's seed figure uses 1000 TFLOP/s "
               "instead (docs/roofline.md)"});
  t.push_back({"a100-80gb-sxm", "NVIDIA A100 SXM 80 GB", "gpu", 2039, 19.5, 312, 0, 624, 80,
               "NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4), "
               "80GB SXM column"});
  t.push_back({"l4", "NVIDIA L4 24 GB", "gpu", 300, 30.3, 121, 242.5, 242.5, 24,
               "NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4), sparse "
               "figures halved"});
  t.push_back({"rtx4090", "NVIDIA GeForce RTX 4090 24 GB", "gpu", 1008, 82.6, 165.2, 330.3, 660.6,
               24,
               "NVIDIA Ada GPU Architecture whitepaper, appendix A (RTX 4090): FP16/BF16 tensor "
               "with FP32 accumulate 165.2, FP8 with FP32 accumulate 330.3, INT8 660.6 (dense)"});
  t.push_back({"rtx3090", "NVIDIA GeForce RTX 3090 24 GB", "gpu", 936, 35.6, 71, 0, 284, 24,
               "NVIDIA Ampere GA102 GPU Architecture whitepaper, appendix A (RTX 3090): FP16/BF16 "
               "tensor with FP32 accumulate 71, INT8 284 (dense)"});
  t.push_back({"agx-orin-64gb", "NVIDIA Jetson AGX Orin 64 GB", "soc", 204.8, 5.3, 42.5, 0, 85, 64,
               "NVIDIA Jetson AGX Orin Series technical brief: 204.8 GB/s LPDDR5, GPU 170 sparse "
               "INT8 TOPS (85 dense), 5.3 FP32 TFLOPS; FP16 42.5 derived as half the INT8 rate"});
  t.push_back({"m2-ultra", "Apple M2 Ultra (76-core GPU, 192 GB)", "soc", 800, 27.2, 27.2, 0, 0,
               192,
               "Apple newsroom 2023-06-05 'Apple introduces M2 Ultra' (800 GB/s, up to 192 GB); "
               "GPU FP32/FP16 27.2 TFLOP/s derived (76 cores x 128 lanes x 2 x 1.398 GHz)"});
  return t;
}

std::string canonical(std::string_view name) {
  std::string n = lower(name);
  if (n == "h100" || n == "h100sxm" || n == "h100-sxm5") return "h100-sxm";
  if (n == "a100" || n == "a100-80gb" || n == "a100-sxm") return "a100-80gb-sxm";
  if (n == "orin" || n == "agx-orin" || n == "jetson-agx-orin") return "agx-orin-64gb";
  if (n == "4090" || n == "rtx-4090") return "rtx4090";
  if (n == "3090" || n == "rtx-3090") return "rtx3090";
  return n;
}

Result<double> get_number(const nlohmann::json& j, const char* key, std::string_view where,
                          bool required) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) return error("{}: missing field '{}'", where, key);
    return 0.0;
  }
  if (!it->is_number()) return error("{}: field '{}' is not a number", where, key);
  double v = it->get<double>();
  if (!std::isfinite(v) || v < 0) return error("{}: field '{}' must be >= 0, got {}", where, key, v);
  return v;
}

}  // namespace

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::kF32: return "f32";
    case Precision::kBF16: return "bf16";
    case Precision::kFP8: return "fp8";
    case Precision::kINT8: return "int8";
  }
  return "?";
}

Result<Precision> precision_from_name(std::string_view name) {
  std::string n = lower(name);
  if (n == "f32" || n == "fp32") return Precision::kF32;
  if (n == "bf16" || n == "fp16" || n == "f16") return Precision::kBF16;
  if (n == "fp8" || n == "f8") return Precision::kFP8;
  if (n == "int8" || n == "i8") return Precision::kINT8;
  return usage_error("unknown compute precision '{}' (f32, bf16, fp8, int8)", name);
}

double Hardware::peak_flops(Precision p) const {
  switch (p) {
    case Precision::kF32: return f32_tflops * 1e12;
    case Precision::kBF16: return bf16_tflops * 1e12;
    case Precision::kFP8: return fp8_tflops * 1e12;
    case Precision::kINT8: return int8_tops * 1e12;
  }
  return 0;
}

const std::vector<Hardware>& builtin_hardware() {
  static const std::vector<Hardware> table = build_table();
  return table;
}

Result<Hardware> hardware_from_json(const nlohmann::json& j, std::string_view where) {
  if (!j.is_object()) return error("{}: hardware entry is not an object", where);
  Hardware hw;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) {
    return error("{}: missing string field 'name'", where);
  }
  hw.name = lower(name->get<std::string>());
  std::string w = fmt::format("{} '{}'", where, hw.name);
  auto str = [&j](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  hw.description = str("description");
  hw.kind = str("kind").empty() ? "gpu" : str("kind");
  hw.source = str("source");
  RIDGE_ASSIGN_OR_RETURN(hw.bandwidth_gbs, get_number(j, "bandwidth_gbs", w, true));
  RIDGE_ASSIGN_OR_RETURN(hw.f32_tflops, get_number(j, "f32_tflops", w, false));
  RIDGE_ASSIGN_OR_RETURN(hw.bf16_tflops, get_number(j, "bf16_tflops", w, false));
  RIDGE_ASSIGN_OR_RETURN(hw.fp8_tflops, get_number(j, "fp8_tflops", w, false));
  RIDGE_ASSIGN_OR_RETURN(hw.int8_tops, get_number(j, "int8_tops", w, false));
  RIDGE_ASSIGN_OR_RETURN(hw.memory_gb, get_number(j, "memory_gb", w, false));
  if (hw.bandwidth_gbs <= 0) return error("{}: bandwidth_gbs must be > 0", w);
  if (hw.f32_tflops + hw.bf16_tflops + hw.fp8_tflops + hw.int8_tops <= 0) {
    return error("{}: needs at least one of f32_tflops, bf16_tflops, fp8_tflops, int8_tops", w);
  }
  return hw;
}

nlohmann::json hardware_to_json(const Hardware& hw) {
  return {{"name", hw.name},           {"description", hw.description}, {"kind", hw.kind},
          {"bandwidth_gbs", hw.bandwidth_gbs}, {"f32_tflops", hw.f32_tflops},
          {"bf16_tflops", hw.bf16_tflops}, {"fp8_tflops", hw.fp8_tflops},
          {"int8_tops", hw.int8_tops}, {"memory_gb", hw.memory_gb}, {"source", hw.source}};
}

Result<std::vector<Hardware>> load_hardware_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return error("{}: cannot open hardware file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return error("{}: not valid JSON", path);
  if (!j.is_object() || !j.contains("hardware") || !j["hardware"].is_array()) {
    return error("{}: expected an object with an array 'hardware'", path);
  }
  std::vector<Hardware> out;
  size_t i = 0;
  for (const auto& e : j["hardware"]) {
    RIDGE_ASSIGN_OR_RETURN(Hardware hw, hardware_from_json(e, fmt::format("{}: hardware[{}]", path, i)));
    out.push_back(std::move(hw));
    ++i;
  }
  return out;
}

Hardware hardware_from_probe(const ProbeResult& p) {
  Hardware hw;
  hw.name = "local";
  hw.description = p.cpu_model.empty() ? "this machine" : p.cpu_model;
  hw.kind = "cpu";
  hw.bandwidth_gbs = p.read_gbs;
  // The larger of the 1-thread and all-thread figures: on a busy machine the all-thread run
  // can come out lower, and a roof must be an upper bound.
  hw.f32_tflops = std::max(p.f32_gflops, p.f32_gflops_1t) / 1e3;
  hw.bf16_tflops = std::max(p.bf16_gflops, p.bf16_gflops_1t) / 1e3;
  hw.int8_tops = std::max(p.int8_gops, p.int8_gops_1t) / 1e3;
  hw.memory_gb = p.memory_gb;
  hw.source = fmt::format("ridge probe ({}, {} threads, measured {})", p.isa, p.n_threads,
                          p.measured_at);
  return hw;
}

Result<Hardware> find_hardware(std::string_view name, const std::vector<Hardware>& extra,
                               const std::optional<ProbeResult>& probe) {
  const std::string key = canonical(name);
  for (const auto& hw : extra) {
    if (hw.name == lower(name) || hw.name == key) return hw;
  }
  if (key == "local") {
    if (!probe) return error("hardware 'local' needs this machine's figures: run `ridge probe` first");
    return hardware_from_probe(*probe);
  }
  std::string known;
  for (const auto& hw : builtin_hardware()) {
    if (hw.name == key) return hw;
    known += hw.name + ", ";
  }
  return usage_error("unknown hardware '{}' (known: {}local; add others with --hardware-file)",
                     name, known);
}

}  // namespace ridge::analysis
