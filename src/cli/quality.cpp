// ridge quality: quality per byte. Quantizes a model to each type, measures each copy's KL
// divergence from the original on a text (quality/kld_eval.h), its bytes per decoded token (the
// cost model), its decode speed here (measured) and on named hardware (the roofline), prints the
// table with the Pareto frontier of KLD against bytes marked, and draws it (--svg).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "analysis/hardware.h"
#include "analysis/probe.h"
#include "analysis/roofline.h"
#include "base/timer.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/quality_chart.h"
#include "offline/quantize.h"
#include "engine/session.h"
#include "quality/kld_eval.h"
#include "tokenizer/tokenizer.h"

namespace ridge::cli {
namespace {

struct QualityArgs {
  std::string model_path, text_path, isa, svg_path, keep_dir, types = "q8_0,q6_k,q5_k_m,q4_k_m,q4_0,q3_k_m,q2_k";
  std::vector<std::string> hws;
  quality::PerplexityOptions o;
  int n_threads = 0;
  int decode_tokens = 32;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Decode tok/s of `m` here: a 16-token prompt, 4 steps to wake the threads, then n timed
// single-token steps; 1 / the median step (a shared machine's preempted steps do not count).
Result<double> measure_decode(const model::Model& m, int n, ThreadPool& pool) {
  constexpr int kWarmup = 4;
  engine::SessionOptions so;
  so.n_ctx = 16 + kWarmup + n + 1;
  so.n_threads = static_cast<int>(pool.size());
  RIDGE_ASSIGN_OR_RETURN(engine::Session s, engine::Session::create(m, so, engine::lend_pool(pool)));
  std::vector<int32_t> prompt(16);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((7 + 13 * i) % static_cast<size_t>(m.config().n_vocab));
  RIDGE_RETURN_IF_ERROR(s.eval(prompt).status());
  for (int i = 0; i < kWarmup; ++i) RIDGE_RETURN_IF_ERROR(s.eval(std::span(prompt).subspan(static_cast<size_t>(i), 1)).status());
  std::vector<double> steps;
  for (int i = 0; i < n; ++i) {
    const int32_t t = prompt[static_cast<size_t>(i) % prompt.size()];
    const Stopwatch sw;
    RIDGE_RETURN_IF_ERROR(s.eval(std::span(&t, 1)).status());
    steps.push_back(sw.seconds());
  }
  std::nth_element(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(steps.size() / 2), steps.end());
  return 1.0 / steps[steps.size() / 2];
}

// What every file's row has: its size, its decode tok/s here, bytes per decoded token at the
// context (cost model), and the roofline's tok/s on each machine.
Status measure_file(const model::Model& m, const std::string& label, int64_t context, int decode_tokens,
                    const std::vector<analysis::Hardware>& hws, ThreadPool& pool, QualityRow& row) {
  row.label = label;
  row.file_bytes = static_cast<double>(m.file().file_size());
  RIDGE_ASSIGN_OR_RETURN(row.measured_tok_s, measure_decode(m, decode_tokens, pool));
  RIDGE_ASSIGN_OR_RETURN(model::TensorTypeFn fn, model::weight_types_from_gguf(m.file()));
  RIDGE_ASSIGN_OR_RETURN(model::ModelCost cost, model::model_cost(m.config(), fn, kv::KvType::kF16));
  row.bytes_per_token = model::cost_of_step(cost, 1, context).bytes();
  for (const analysis::Hardware& hw : hws) {
    analysis::RooflineQuery q{cost, label, fn(model::bulk_role(m.config()), 0), hw, std::nullopt, context, {1}, 0};
    RIDGE_ASSIGN_OR_RETURN(analysis::RooflineResult r, analysis::analyze(q));
    row.projected_tok_s.push_back(r.decode.front().tok_s_per_seq);
  }
  return ok_status();
}

// One quantized copy: written (to `dir`, removed afterwards unless kept), loaded, measured
// against the base's distributions.
Result<QualityRow> measure_copy(const gguf::File& in, const offline::QuantizePlan& plan, const std::string& name,
                                const std::string& dir, bool keep, const kernels::Kernels& k,
                                const quality::BaseDistributions& base, std::span<const int32_t> tokens, const QualityArgs& a,
                                const std::vector<analysis::Hardware>& hws, ThreadPool& pool) {
  const std::string path = fmt::format("{}/ridge-quality-{}-{}.gguf", dir, ::getpid(), name);
  struct Remove {
    const std::string& path;
    bool keep;
    ~Remove() {
      std::error_code ec;
      if (!keep) std::filesystem::remove(path, ec);
    }
  } remove{path, keep};
  gguf::Writer w(in.alignment());
  RIDGE_RETURN_IF_ERROR(offline::add_quantized_model(in, plan, a.n_threads, w).with_prefix("quality: " + name));
  RIDGE_RETURN_IF_ERROR(w.write(path).with_prefix("quality: " + name));
  RIDGE_ASSIGN_OR_RETURN(model::Model q, model::Model::load(path, k, gguf::Backing::kHugePages));
  RIDGE_ASSIGN_OR_RETURN(quality::KldSummary kl, quality::kld_against(q, base, tokens, a.o, pool));
  QualityRow r;
  RIDGE_RETURN_IF_ERROR(measure_file(q, name, a.o.n_ctx, a.decode_tokens, hws, pool, r));
  r.bits_per_weight = plan.bits_per_weight_out();
  r.n_fallback = plan.n_fallback;
  r.ppl = kl.ppl;
  r.kld = kl.kld_mean;
  r.kld_99 = kl.kld_99;
  r.same_top = kl.same_top;
  r.rms_dp = kl.rms_dp;
  return r;
}

}  // namespace

int cmd_quality(int argc, char** argv) {
  CLI::App app{"Quality per byte: quantize a model to each type, measure each copy's KL divergence from it on a text, "
               "its bytes per token and decode speed here and on named hardware; the Pareto frontier", "quality"};
  QualityArgs a;
  a.o.n_ctx = 256;
  a.o.n_chunks = 8;
  app.add_option("-m,--model", a.model_path, "F32 / F16 / BF16 GGUF model (the base)")->required();
  app.add_option("-f,--file", a.text_path, "text to measure on")->required();
  app.add_option("--types", a.types, "types and mixtures to try, comma separated")->capture_default_str();
  app.add_option("-c,--ctx-size", a.o.n_ctx, "tokens per chunk (as ridge perplexity)")->capture_default_str();
  app.add_option("--chunks", a.o.n_chunks, "chunks to score at most (-1: all)")->capture_default_str();
  app.add_option("--hw", a.hws, "machines to project decode speed on (default: local if probed, else h100)")->delimiter(',');
  app.add_option("--svg", a.svg_path, "draw KLD against bytes per token here");
  app.add_option("--keep", a.keep_dir, "keep the quantized files in this folder (default: removed)");
  app.add_option("--decode-tokens", a.decode_tokens, "decode steps timed per file")->capture_default_str();
  app.add_option("-t,--threads", a.n_threads, "threads (default: every CPU)");
  app.add_option("--isa", a.isa, "force kernels: ref, avx2, avx512");
  if (auto rc = parse(app, argc, argv)) return *rc;
  if (Status s = quality::check_options(a.o); !s.ok()) return report(s.with_prefix("quality"));
  if (a.decode_tokens < 1 || a.decode_tokens > 4096) return report(usage_error("quality: --decode-tokens {} is outside 1..4096", a.decode_tokens));
  std::vector<offline::QuantMix> mixes;
  for (const std::string& t : split(a.types)) {
    auto mix = offline::quant_mix_from_name(t);
    if (!mix.ok()) return report(mix.status().with_prefix("quality: --types"));
    mixes.push_back(*mix);
  }
  if (mixes.empty()) return report(usage_error("quality: --types names no type"));
  const std::optional<analysis::ProbeResult> probe = analysis::load_probe();
  if (a.hws.empty()) a.hws = {probe ? "local" : "h100"};
  std::vector<analysis::Hardware> hws;
  for (const std::string& name : a.hws) {
    auto hw = analysis::find_hardware(name, {}, probe);
    if (!hw.ok()) return report(hw.status().with_prefix("quality: --hw"));
    hws.push_back(*hw);
  }
  auto text = read_text_file(a.text_path, "quality", "-f");
  if (!text.ok()) return report(text.status());
  auto k = pick_kernels(a.isa);
  if (!k.ok()) return report(k.status());
  auto in = gguf::File::open(a.model_path);
  if (!in.ok()) return report(in.status());
  auto base = model::Model::load(a.model_path, **k, gguf::Backing::kHugePages);
  if (!base.ok()) return report(base.status());
  auto tok = tokenizer::Tokenizer::from_gguf(base->file());
  if (!tok.ok()) return report(tok.status());
  auto tokens_or = quality::text_tokens(*tok, *text, a.o);
  if (!tokens_or.ok()) return report(tokens_or.status().with_prefix("quality"));
  const std::vector<int32_t> tokens = std::move(tokens_or).value();
  a.o.bos = quality::chunk_bos(*tok);
  if (a.n_threads <= 0) a.n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(a.n_threads);
  const std::string dir = a.keep_dir.empty() ? std::filesystem::temp_directory_path().string() : a.keep_dir;
  if (!a.keep_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir)) return report(usage_error("quality: cannot make --keep folder '{}'", dir));
  }

  // Every plan first: a base the quantizer cannot take is refused before any evaluation.
  std::vector<offline::QuantizePlan> plans;
  for (offline::QuantMix mix : mixes) {
    offline::QuantizeOptions qo;
    qo.mix.mix = mix;
    qo.n_threads = a.n_threads;
    auto plan = offline::plan_quantization(*in, qo);
    if (!plan.ok()) return report(plan.status().with_prefix(fmt::format("quality: {}", offline::quant_mix_info(mix).name)));
    plans.push_back(std::move(plan).value());
  }
  std::vector<QualityRow> rows;
  const Stopwatch total;
  auto b = quality::base_distributions(*base, tokens, a.o, pool);
  if (!b.ok()) return report(b.status());
  {
    auto fn = model::weight_types_from_gguf(base->file());
    if (!fn.ok()) return report(fn.status());
    const GgmlType type = (*fn)(model::bulk_role(base->config()), 0);
    QualityRow r;
    if (Status s = measure_file(*base, std::string(ggml_type_name(type)), a.o.n_ctx, a.decode_tokens, hws, pool, r); !s.ok()) {
      return report(s);
    }
    r.bits_per_weight = 8.0 * traits(type).block_bytes / traits(type).block_elems;
    r.ppl = b->ppl.ppl;
    r.base = true;
    r.same_top = 1;
    rows.push_back(r);
  }
  for (size_t i = 0; i < mixes.size(); ++i) {
    const std::string name(offline::quant_mix_info(mixes[i]).name);
    auto r = measure_copy(*in, plans[i], name, dir, !a.keep_dir.empty(), **k, *b, tokens, a, hws, pool);
    if (!r.ok()) return report(r.status());
    rows.push_back(std::move(r).value());
    fmt::print(stderr, "quality: {} done ({:.1f} s so far)\n", name, total.seconds());
  }
  mark_frontier(rows);
  fmt::print("{}", format_quality_table(rows, a.hws, b->ppl.n_scored, a.text_path));
  if (!a.svg_path.empty()) {
    std::ofstream out(a.svg_path);
    out << quality_svg(rows, std::filesystem::path(a.model_path).filename().string());
    if (!out) return report(error("quality: cannot write --svg '{}'", a.svg_path));
  }
  return 0;
}

}  // namespace ridge::cli
