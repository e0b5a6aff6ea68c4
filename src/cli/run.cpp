// ridge run: complete one prompt, streaming the text as it is generated; prompt and decode
// speed at the end (stderr).
#include <cstdio>

#include "analysis/probe.h"
#include "backend/registry.h"
#include "analysis/verdict.h"
#include "base/log.h"
#include "base/timer.h"
#include "kernels/kernels.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/generation.h"

namespace ridge::cli {

namespace {

// A device's decode line: its GB/s against the read bandwidth measured on it now (a short pass).
std::string device_run_summary(const std::string& device, double bytes_per_token, double tok_per_s) {
  const double gbs = bytes_per_token * tok_per_s / 1e9;
  std::string s = fmt::format("decode {:.1f} tok/s · {:.1f} GB/s", tok_per_s, gbs);
  auto bw = backend::probe_device(device, 0, 256ull << 20, 5);
  if (!bw.ok()) return s + fmt::format(" · no roof ({})", bw.status().message());
  return s + fmt::format(" = {:.0f}% of {:.0f} GB/s measured on {} (read pass)", 100.0 * gbs / bw->read_gbs,
                         bw->read_gbs, bw->device);
}

}  // namespace

int cmd_run(int argc, char** argv) {
  CLI::App app("Generate text from a prompt with a GGUF model.", "run");
  GenerationOptions o;
  std::string prompt;
  bool echo = false;
  add_generation_options(app, o);
  app.add_option("-p,--prompt", prompt, "prompt text")->required();
  app.add_flag("--echo", echo, "print the prompt before the generated text");
  if (auto rc = parse(app, argc, argv)) return *rc;

  auto loaded = load_for_generation(o);
  if (!loaded.ok()) return report(loaded.status());
  Loaded& l = *loaded;
  const int64_t n_ctx = l.session->n_ctx();

  std::vector<int32_t> tokens = l.tok->encode(prompt, /*add_special=*/true, /*parse_special=*/true);
  if (tokens.empty()) return report(Status::usage("run: the prompt is empty (no tokens)"));
  if (static_cast<int64_t>(tokens.size()) > n_ctx) {
    return report(usage_error("run: the prompt has {} tokens but the context holds {} (raise -c)",
                              tokens.size(), n_ctx));
  }
  auto sampler = sampling::Sampler::create(o.sampling, static_cast<int32_t>(l.model->config().n_vocab));
  if (!sampler.ok()) return report(sampler.status());

  if (echo) {
    fmt::print("{}", prompt);
    std::fflush(stdout);
  }
  Stopwatch sw;
  auto logits = l.session->eval(tokens);
  if (!logits.ok()) return report(logits.status());
  const double prompt_s = sw.seconds();

  std::vector<int32_t> history = tokens;
  auto stats = generate(l, *sampler, *logits, history, o.n_predict, o.sampling.stop,
                        [](std::string_view text) {
                          fmt::print("{}", text);
                          std::fflush(stdout);
                        });
  if (!stats.ok()) return report(stats.status());
  fmt::print("\n");
  std::fflush(stdout);
  if (stats->context_full) log_warn("the context of {} tokens is full (raise -c)", n_ctx);
  const auto n_prompt = static_cast<double>(tokens.size());
  const auto n_dec = static_cast<double>(stats->n_evaluated);
  const auto n_steps = static_cast<double>(stats->n_decode_steps);
  fmt::print(stderr,
             "\nload: {:.2f} s ({}) | prompt: {} tokens, {:.2f} s, {:.1f} tok/s | decode: {} tokens, "
             "{:.2f} s, {:.1f} tok/s | {}\n",
             l.load_seconds,
             gguf::backing_name(l.model->file().backing()),
             tokens.size(), prompt_s, n_prompt / prompt_s, stats->n_evaluated,
             stats->decode_seconds, n_dec > 0 ? n_dec / stats->decode_seconds : 0.0,
             o.device == "cpu" ? fmt::format("{} threads, {} kernels", l.pool->size(),
                                             kernels::kernels_label(l.model->kernels().isa))
                               : fmt::format("device {}", o.device));
  if (l.spec_max > 0) {
    const spec::SpecStats& sp = stats->spec;
    fmt::print(stderr, "speculative ({}, {} rule, up to {} per step): {} forward steps for {} tokens · {} of {} "
               "drafted tokens accepted ({:.0f}%) · {:.2f} tokens per verification step · predicted "
               "speed-up {:.2f}x (cost model, draft lengths chosen from the acceptance)\n",
               o.spec, l.spec_rejection ? "rejection" : "match", o.spec_max, stats->n_decode_steps, stats->n_evaluated, sp.n_accepted, sp.n_drafted,
               100.0 * sp.acceptance(), sp.tokens_per_step(), sp.predicted_speedup());
  }
  // Against the roof: the cost model's bytes/FLOPs of a decode step at the mean decode context.
  auto types = model::weight_types_from_gguf(l.model->file());
  auto cost = types.ok() ? model::model_cost(l.model->config(), *types, l.kv_type)
                         : Result<model::ModelCost>(types.status());
  // A speculative step reads the weights once for several tokens: its bandwidth is the steps'.
  if (n_steps > 0 && cost.ok()) {
    const model::StepCost c = model::cost_of_step(*cost, 1, static_cast<int64_t>(n_prompt + n_dec / 2) + 1);
    if (o.device == "cpu") {
      fmt::print(stderr, "{}\n", analysis::format_run_summary(c.bytes(), n_steps / stats->decode_seconds,
                                                             analysis::load_probe(), c.flops));
    } else {
      fmt::print(stderr, "{}\n", device_run_summary(o.device, c.bytes(), n_steps / stats->decode_seconds));
    }
  }
  return 0;
}

}  // namespace ridge::cli
