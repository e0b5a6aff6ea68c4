// `ridge roofline`: what bounds a model on a machine, per weight type, KV type, hardware,
// context and batch size (docs/roofline.md).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "analysis/probe.h"
#include "analysis/roofline.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "gguf/reader.h"
#include "model/config.h"
#include "model/cost.h"
#include "offline/presets.h"
#include "offline/weight_types.h"

namespace ridge::cli {
namespace {

struct Model {
  model::ModelConfig cfg;
  std::optional<gguf::File> file;  // set when MODEL is a GGUF path
};

Result<Model> open_model(const std::string& spec) {
  Model m;
  std::error_code ec;
  if (spec.ends_with(".gguf") || std::filesystem::is_regular_file(spec, ec)) {
    RIDGE_ASSIGN_OR_RETURN(gguf::File f, gguf::File::open(spec));
    RIDGE_ASSIGN_OR_RETURN(m.cfg, model::config_from_gguf(f));
    m.file = std::move(f);
    return m;
  }
  RIDGE_ASSIGN_OR_RETURN(m.cfg, offline::preset_config(spec));
  return m;
}

std::string list_hardware(const std::vector<analysis::Hardware>& extra,
                          const std::optional<analysis::ProbeResult>& probe) {
  std::string s = fmt::format("{:<15} {:>9} {:>8} {:>8} {:>8} {:>8} {:>7}  {}\n", "name", "GB/s",
                              "f32 TF", "bf16 TF", "fp8 TF", "int8 TO", "mem GB", "source");
  auto row = [&s](const analysis::Hardware& h) {
    s += fmt::format("{:<15} {:>9.1f} {:>8.4g} {:>8.4g} {:>8.4g} {:>8.4g} {:>7.0f}  {}\n", h.name,
                     h.bandwidth_gbs, h.f32_tflops, h.bf16_tflops, h.fp8_tflops, h.int8_tops,
                     h.memory_gb, h.source);
  };
  for (const auto& h : analysis::builtin_hardware()) row(h);
  for (const auto& h : extra) row(h);
  if (probe) {
    row(analysis::hardware_from_probe(*probe));
  } else {
    s += "local           (run `ridge probe` to measure this machine)\n";
  }
  return s;
}

}  // namespace

int cmd_roofline(int argc, char** argv) {
  CLI::App app("Roofline of a model on a machine: bytes and FLOPs per token, what bounds prefill "
               "and decode, ceilings per batch size, knee batch, memory fit",
               "ridge roofline");
  std::string model_spec, preset, hw_file, svg_path, compute = "auto";
  std::vector<std::string> types, kv_types = {"f16"}, hws;
  std::vector<int64_t> contexts = {4096}, batches = {1, 8, 64};
  int64_t prefill = 0;
  bool json = false, list_hw = false;
  app.add_option("model", model_spec, "a GGUF file or a named shape (qwen3-8b, llama-2-7b, qwen3-30b-a3b, ...)");
  app.add_option("--preset", preset, "a named shape, as MODEL");
  app.add_option("--type", types, "weight types: f16,bf16,q8_0,q4_K,q4_k_m,... (default: the "
                 "file's own types; bf16 for a named shape)")->delimiter(',');
  app.add_option("--kv-type", kv_types, "KV cache types: f32,f16,bf16,q8_0,fp8 (default f16)")->delimiter(',');
  app.add_option("--hw", hws, "hardware: h100,h200,b200,a100,l4,rtx4090,rtx3090,agx-orin-64gb,"
                 "m2-ultra,local (default: local if probed, else h100)")->delimiter(',');
  app.add_option("--ctx", contexts, "context lengths (default 4096)")->delimiter(',');
  app.add_option("--batch", batches, "decode batch sizes (default 1,8,64)")->delimiter(',');
  app.add_option("--prefill", prefill, "prompt length of the prefill phase (default: the context)");
  app.add_option("--compute", compute, "precision of the arithmetic: auto, f32, bf16, fp8, int8");
  app.add_option("--hardware-file", hw_file, "JSON file with more hardware (docs/roofline.md)");
  app.add_flag("--json", json, "print JSON (schema ridge.roofline/1)");
  app.add_option("--svg", svg_path, "write the roofline and throughput charts to this SVG file");
  app.add_flag("--list-hw", list_hw, "list the hardware table with its sources and exit");
  if (auto rc = parse(app, argc, argv)) return *rc;

  std::vector<analysis::Hardware> extra;
  if (!hw_file.empty()) {
    auto r = analysis::load_hardware_file(hw_file);
    if (!r.ok()) return report(r.status());
    extra = std::move(r).value();
  }
  const std::optional<analysis::ProbeResult> probe = analysis::load_probe();
  if (list_hw) {
    fmt::print("{}", list_hardware(extra, probe));
    return 0;
  }
  if (!preset.empty()) {
    if (!model_spec.empty()) return report(usage_error("ridge roofline: give MODEL or --preset, not both"));
    model_spec = preset;
  }
  if (model_spec.empty()) return report(usage_error("ridge roofline: a model is required (see --help)"));
  std::optional<analysis::Precision> forced;
  if (compute != "auto") {
    auto p = analysis::precision_from_name(compute);
    if (!p.ok()) return report(p.status());
    forced = *p;
  }
  if (hws.empty()) {
    hws = {probe ? "local" : "h100"};
    if (!probe && !json) fmt::print(stderr, "no probe figures for this machine: showing h100 (run `ridge probe` to add local)\n");
  }
  auto model = open_model(model_spec);
  if (!model.ok()) return report(model.status());
  if (types.empty()) types = {model->file ? "file" : "bf16"};

  std::vector<analysis::RooflineResult> results;
  for (const auto& type : types) {
    Result<model::TensorTypeFn> fn = type == "file" && model->file
                                         ? model::weight_types_from_gguf(*model->file)
                                         : offline::weight_types_by_name(type, model->cfg);
    if (!fn.ok()) return report(fn.status());
    for (const auto& kv_name : kv_types) {
      auto kv = kv::kv_type_from_name(kv_name);
      if (!kv.ok()) return report(kv.status());
      auto cost = model::model_cost(model->cfg, *fn, *kv);
      if (!cost.ok()) return report(cost.status());
      for (const auto& hw_name : hws) {
        auto hw = analysis::find_hardware(hw_name, extra, probe);
        if (!hw.ok()) return report(hw.status());
        for (int64_t ctx : contexts) {
          analysis::RooflineQuery q{*cost, type, (*fn)(model::bulk_role(model->cfg), 0), *hw, forced, ctx,
                                    batches, prefill};
          auto r = analysis::analyze(q);
          if (!r.ok()) return report(r.status());
          results.push_back(std::move(r).value());
        }
      }
    }
  }
  if (!svg_path.empty()) {
    std::ofstream out(svg_path);
    out << analysis::roofline_svg(results);
    if (!out) return report(error("{}: cannot write SVG", svg_path));
  }
  if (json) {
    fmt::print("{}\n", analysis::roofline_to_json(results).dump(2));
    return 0;
  }
  for (size_t i = 0; i < results.size(); ++i) {
    fmt::print("{}{}", i ? "\n" : "", analysis::format_roofline(results[i]));
  }
  if (!svg_path.empty()) fmt::print("\nwrote {}\n", svg_path);
  return 0;
}

}  // namespace ridge::cli
