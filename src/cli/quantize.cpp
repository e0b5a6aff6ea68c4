// ridge quantize: F32/F16/BF16 GGUF -> any writable type or llama.cpp mixture (q4_k_m, ...).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/timer.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "gguf/reader.h"
#include "offline/quantize.h"
#include "quality/imatrix.h"
#include "kernels/quant/quants.h"
#include "quality/mix_search.h"
#include "tokenizer/tokenizer.h"

namespace ridge::cli {
namespace {

std::string type_list() {
  std::string out;
  for (const auto& m : offline::quant_mixes()) out += fmt::format("  {:<9} {}\n", m.name, m.summary);
  return out;
}

double mib(uint64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

void print_plan(const offline::QuantizePlan& plan) {
  size_t i = 0;
  for (const auto& t : plan.tensors) {
    std::string note;
    if (t.choice.overridden) note = " (--tensor-type)";
    if (t.choice.fell_back()) {
      note += fmt::format(" ({} does not fit {} columns)", ggml_type_name(t.choice.wanted), t.shape[0]);
    }
    fmt::print("[{:4}/{:4}] {:<36} {:<16} {:>5} -> {:<5} {:9.3f} MiB -> {:9.3f} MiB{}\n", ++i, plan.tensors.size(),
               t.name, shape_str(t.shape), ggml_type_name(t.from), ggml_type_name(t.choice.type), mib(t.bytes_in),
               mib(t.bytes_out), note);
  }
}

void print_summary(const offline::QuantizePlan& plan) {
  std::map<std::string, std::pair<int, uint64_t>> by_type;  // type -> (tensors, bytes)
  for (const auto& t : plan.tensors) {
    auto& e = by_type[std::string(ggml_type_name(t.choice.type))];
    ++e.first;
    e.second += t.bytes_out;
  }
  const double n = static_cast<double>(plan.n_elements);
  fmt::print("{}: {} tensors, {:.2f} MiB ({:.2f} bits/weight) -> {:.2f} MiB ({:.2f} bits/weight)\n",
             offline::quant_mix_info(plan.mix).name, plan.tensors.size(), mib(plan.bytes_in),
             n > 0 ? 8.0 * static_cast<double>(plan.bytes_in) / n : 0.0, mib(plan.bytes_out), plan.bits_per_weight_out());
  for (const auto& [type, e] : by_type) fmt::print("  {:<5} {:4} tensors {:10.2f} MiB\n", type, e.first, mib(e.second));
  if (plan.n_fallback > 0) {
    fmt::print("  {} tensor(s) have rows that do not fill whole blocks of the chosen type and use a fallback:\n",
               plan.n_fallback);
    for (const auto& t : plan.tensors) {
      if (!t.choice.fell_back()) continue;
      fmt::print("    {:<36} {} columns: {} -> {}\n", t.name, t.shape[0], ggml_type_name(t.choice.wanted),
                 ggml_type_name(t.choice.type));
    }
  }
}

Status write_output(const gguf::File& in, const offline::QuantizePlan& plan, int threads, const std::string& out) {
  gguf::Writer writer(in.alignment());
  RIDGE_RETURN_IF_ERROR(offline::add_quantized_model(in, plan, threads, writer));
  const bool tty = isatty(STDERR_FILENO);
  const bool show = plan.bytes_out >= (64u << 20);
  int last_pct = -1;
  Status s = write_gguf(writer, out, [&](uint64_t done, uint64_t all) {
    const int pct = all ? static_cast<int>(done * 100 / all) : 100;
    if (!show || pct == last_pct || (!tty && pct / 10 == last_pct / 10)) return;
    last_pct = pct;
    fmt::print(stderr, "{}quantize: {:3d}% of {:.1f} MiB", tty ? "\r" : "", pct, mib(all));
    if (!tty) fmt::print(stderr, "\n");
  });
  if (tty && last_pct >= 0) fmt::print(stderr, "\n");
  return s;
}

void print_importance(const offline::QuantizePlan& plan, const std::string& path) {
  fmt::print("imatrix {}: {} tensors quantized with its weights", path, plan.n_weighted);
  if (plan.unweighted.empty()) {
    fmt::print("\n");
    return;
  }
  fmt::print(", {} without an entry (plain squared error): {}{}\n", plan.unweighted.size(),
             fmt::join(plan.unweighted.begin(), plan.unweighted.begin() + std::min<size_t>(plan.unweighted.size(), 6), ", "),
             plan.unweighted.size() > 6 ? ", ..." : "");
}

struct TargetArgs {
  double kld = 0;
  std::string text_path;
  std::vector<std::string> ladder;
  quality::PerplexityOptions o;
};

// --target-kld: the base model's distributions on the text, then the search; the plan it chose.
Result<offline::QuantizePlan> search_for_target(const std::shared_ptr<const gguf::File>& in,
                                                const offline::QuantizeOptions& opt, TargetArgs& t, int threads) {
  quality::MixSearchOptions so;
  so.target_kld = t.kld;
  so.importance = opt.importance;
  so.n_threads = threads;
  if (!t.ladder.empty()) {
    so.ladder.clear();
    for (const std::string& name : t.ladder) {
      const auto type = ggml_type_from_name(name);
      if (!type || !kernels::can_quantize(*type)) return usage_error("quantize: --ladder: '{}' is not a type ridge quantizes to", name);
      so.ladder.push_back(*type);
    }
  }
  RIDGE_ASSIGN_OR_RETURN(std::string text, read_text_file(t.text_path, "quantize", "-f"));
  const kernels::Kernels& k = kernels::kernels_for(kernels::best_isa());
  RIDGE_ASSIGN_OR_RETURN(model::Model base, model::Model::from_file(in, k));
  RIDGE_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, tokenizer::Tokenizer::from_gguf(base.file()));
  auto tokens_or = quality::text_tokens(tok, text, t.o);
  if (!tokens_or.ok()) return tokens_or.status().with_prefix("quantize");
  const std::vector<int32_t> tokens = std::move(tokens_or).value();
  t.o.bos = quality::chunk_bos(tok);
  ThreadPool pool(threads);
  RIDGE_ASSIGN_OR_RETURN(quality::BaseDistributions b, quality::base_distributions(base, tokens, t.o, pool));
  const Stopwatch sw;
  auto found = quality::search_mixture(*in, k, b, tokens, t.o, opt.mix.mix, so, pool,
                                      [](const std::string& line) { fmt::print(stderr, "target-kld: {}\n", line); });
  if (!found.ok()) return found.status().with_prefix("quantize");
  quality::MixSearchResult& r = *found;
  fmt::print("target-kld {}: measured KLD {:.6f} (predicted {:.6f}) at {:.3f} bits/weight; {} alone: KLD {:.6f} at "
             "{:.3f} bits/weight ({} groups, {} copies measured in {:.1f} s on {} chunks of {} tokens of {})\n",
             t.kld, r.kld_measured, r.kld_predicted, r.plan.bits_per_weight_out(),
             offline::quant_mix_info(opt.mix.mix).name, r.kld_named, r.bpw_named, r.n_groups, r.n_evaluations,
             sw.seconds(), quality::chunk_count(static_cast<int64_t>(tokens.size()), t.o), t.o.n_ctx, t.text_path);
  return std::move(r.plan);
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
  CLI::App app("Quantize an F32/F16/BF16 GGUF model with llama.cpp's per-tensor mixture rules.\n"
               "usage: ridge quantize IN.gguf OUT.gguf TYPE   (or IN.gguf TYPE --dry-run)\n\ntypes:\n" + type_list(),
               "quantize");
  std::vector<std::string> positional;
  std::vector<std::string> overrides;
  bool dry_run = false, pure = false;
  std::string imatrix_path;
  TargetArgs target;
  target.o.n_ctx = 128;
  target.o.n_chunks = 8;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  app.add_option("args", positional, "IN.gguf OUT.gguf TYPE")->required();
  app.add_option("--tensor-type", overrides,
                 "PATTERN=TYPE: tensors whose name matches get TYPE (glob over the whole name, or a regex "
                 "searched in it; first match wins); repeatable")
      ->allow_extra_args(false);
  app.add_flag("--dry-run", dry_run, "print every tensor's type and the sizes; write nothing");
  app.add_flag("--pure", pure, "no per-tensor rules: every quantizable weight in the base type");
  app.add_option("-t,--threads", threads, "threads")->capture_default_str();
  app.add_option("--imatrix", imatrix_path,
                 "importance matrix (ridge imatrix or llama-imatrix, GGUF): the scale searches minimise each "
                 "column's error weighted by its mean squared activation; required by iq1_*, iq2_*, iq3_xxs, "
                 "iq3_xs (and any tensor written as iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s or iq3_xxs)");
  app.add_option("--target-kld", target.kld,
                 "choose each tensor's type for this mean KL divergence from the input on -f's text: the cheapest "
                 "mixture found whose measured KLD is at most this (TYPE's rules place the rest)");
  app.add_option("-f,--file", target.text_path, "--target-kld: the text the KL divergence is measured on");
  app.add_option("-c,--ctx-size", target.o.n_ctx, "--target-kld: tokens per chunk")->capture_default_str();
  app.add_option("--chunks", target.o.n_chunks, "--target-kld: chunks measured (-1: all)")->capture_default_str();
  app.add_option("--ladder", target.ladder, "--target-kld: the types to choose from, cheapest first (default "
                 "q2_K,q3_K,q4_K,q5_K,q6_K,q8_0)")->delimiter(',');
  if (auto rc = parse(app, argc, argv)) return *rc;

  if (positional.size() != 3 && !(dry_run && positional.size() == 2)) {
    return report(usage_error("quantize: expected IN.gguf OUT.gguf TYPE (or IN.gguf TYPE with --dry-run), got {} "
                              "argument(s)", positional.size()));
  }
  if (threads < 1) return report(usage_error("quantize: --threads must be at least 1, got {}", threads));
  const std::string& in_path = positional[0];
  const std::string out_path = positional.size() == 3 ? positional[1] : "";
  auto mix = offline::quant_mix_from_name(positional.back());
  if (!mix.ok()) return report(mix.status().with_prefix("quantize"));
  offline::QuantizeOptions opt;
  opt.mix.mix = *mix;
  opt.mix.pure = pure;
  opt.n_threads = threads;
  for (const auto& spec : overrides) {
    auto o = offline::parse_tensor_type_override(spec);
    if (!o.ok()) return report(o.status().with_prefix("quantize"));
    opt.mix.overrides.push_back(*o);
  }
  std::error_code ec;
  if (!out_path.empty() && std::filesystem::equivalent(in_path, out_path, ec)) {
    return report(usage_error("quantize: the output {} is the input file", out_path));
  }

  auto opened = gguf::File::open(in_path);
  if (!opened.ok()) return report(opened.status());
  const auto in = std::make_shared<const gguf::File>(std::move(opened).value());
  offline::ImportanceMap importance;
  if (!imatrix_path.empty()) {
    auto im = quality::read_imatrix(imatrix_path);
    if (!im.ok()) return report(im.status().with_prefix("quantize"));
    importance = quality::column_importance(std::move(im).value(), *in);
    opt.importance = &importance;
    opt.mix.imatrix = true;
  }
  if ((target.kld != 0) != !target.text_path.empty()) {
    return report(usage_error("quantize: --target-kld and -f go together (the KL divergence is measured on that text)"));
  }
  // The type's own plan first: a cheap refusal (an i-quant without --imatrix) before any search.
  opt.dry_run = dry_run;
  auto plan = offline::plan_quantization(*in, opt);
  if (plan.ok() && target.kld != 0) plan = search_for_target(in, opt, target, threads);
  if (!plan.ok()) return report(plan.status());
  if (dry_run) {
    print_plan(*plan);
    print_summary(*plan);
    if (opt.importance != nullptr) print_importance(*plan, imatrix_path);
    for (const auto& t : plan->tensors) {
      if (t.name != plan->needs_imatrix) continue;
      fmt::print("note: writing this needs an importance matrix ('{}' is {}): make one with "
                 "`ridge imatrix -m {} -f TEXT.txt -o imatrix.gguf` and pass --imatrix imatrix.gguf\n",
                 t.name, ggml_type_name(t.choice.type), in_path);
    }
    return 0;
  }
  Stopwatch sw;
  Status s = write_output(*in, *plan, threads, out_path);
  if (!s.ok()) return report(s);
  print_summary(*plan);
  if (opt.importance != nullptr) print_importance(*plan, imatrix_path);
  fmt::print("wrote {} in {:.2f} s ({} threads)\n", out_path, sw.seconds(), threads);
  return 0;
}

}  // namespace ridge::cli
