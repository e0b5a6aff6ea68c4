// ridge synth: a random-weight model with the exact shapes and metadata of a real checkpoint.
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <thread>

#include "base/timer.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "gguf/reader.h"
#include "offline/presets.h"
#include "offline/synth.h"

namespace ridge::cli {
namespace {

std::string preset_list() {
  std::string out;
  for (const auto& p : offline::presets()) {
    out += fmt::format("  {:<14} {:<6} {:>3} layers  embd {:>5}  heads {:>2}/{:<2}  ff {:>5}  vocab {:>6}  {}\n", p.name,
                       p.config.arch, p.config.n_layer, p.config.n_embd, p.config.n_head, p.config.n_head_kv,
                       p.config.n_ff, p.config.n_vocab, p.hf_name);
  }
  return out;
}

}  // namespace

int cmd_synth(int argc, char** argv) {
  CLI::App app("Write a random-weight GGUF model with the exact shapes of a real checkpoint.", "synth");
  std::string preset, type_name = "f16", out, vocab_path;
  uint64_t seed = 1;
  std::optional<int64_t> layers;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool list = false;
  app.add_option("--preset", preset, "model shape (see --list)");
  app.add_option("--type", type_name,
                 "weight type: f32, f16, bf16, q8_0, q4_0, q4_k, iq2_xxs, ... (every matrix) or a llama.cpp "
                 "mixture: q4_k_m, q3_k_s, iq2_m, iq3_xs, ... (a name that is both is the type)")
      ->capture_default_str();
  app.add_option("-o,--output", out, "output GGUF file");
  app.add_option("--seed", seed, "random seed (same seed, same file)")->capture_default_str();
  app.add_option("--layers", layers, "override the number of layers");
  app.add_option("--vocab", vocab_path, "copy the tokenizer from this GGUF file");
  std::string pooling;
  app.add_option("--pooling", pooling, "write an embedding model's pooling_type: mean, cls or last")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  app.add_option("-t,--threads", threads, "threads")->capture_default_str();
  app.add_flag("--list", list, "list presets");
  bool mtp = false;
  app.add_flag("--mtp", mtp, "add an MTP (next-token-prediction) block after the trunk (qwen35, qwen35moe)");
  if (auto rc = parse(app, argc, argv)) return *rc;
  if (list) {
    fmt::print("{}", preset_list());
    return 0;
  }
  if (preset.empty()) return report(Status::usage("synth: --preset is required (see ridge synth --list)"));
  if (out.empty()) return report(Status::usage("synth: -o FILE.gguf is required"));
  if (threads < 1) return report(usage_error("synth: --threads must be at least 1, got {}", threads));
  auto type = ggml_type_from_name(type_name);
  std::optional<offline::QuantMix> mix;  // a llama.cpp mixture name (q4_k_m, q3_k_s, ...)
  if (!type) {
    auto m = offline::quant_mix_from_name(type_name);
    if (!m.ok()) return report(usage_error("synth: unknown --type '{}'", type_name));
    mix = *m;
    type = offline::quant_mix_info(*m).base;
  }

  auto cfg = offline::preset_config(preset);
  if (!cfg.ok()) return report(cfg.status());
  if (layers) {
    if (*layers < 1 || *layers > 1000) return report(usage_error("synth: --layers must be in 1..1000, got {}", *layers));
    cfg->n_layer = *layers;
  }
  if (mtp) {
    if (cfg->arch != "qwen35" && cfg->arch != "qwen35moe") {
      return report(usage_error("synth: --mtp needs a qwen35 or qwen35moe preset, '{}' is {}", preset, cfg->arch));
    }
    cfg->n_nextn_layers = 1;
  }
  if (pooling == "mean") cfg->pooling = model::Pooling::kMean;
  if (pooling == "cls") cfg->pooling = model::Pooling::kCls;
  if (pooling == "last") cfg->pooling = model::Pooling::kLast;
  std::optional<gguf::File> vocab;
  if (!vocab_path.empty()) {
    auto v = gguf::File::open(vocab_path);
    if (!v.ok()) return report(v.status());
    vocab = std::move(v).value();
  }
  offline::SynthOptions opt;
  opt.type = *type;
  opt.mix = mix;
  opt.seed = seed;
  opt.vocab = vocab ? &*vocab : nullptr;
  opt.n_threads = threads;

  Stopwatch sw;
  gguf::Writer writer;
  auto effective = offline::build_synthetic_model(*cfg, opt, writer);
  if (!effective.ok()) return report(effective.status());
  const uint64_t total = writer.total_tensor_bytes();
  const bool tty = isatty(STDERR_FILENO);
  int last_pct = -1;
  Status s = writer.write(out, [&](uint64_t done, uint64_t all) {
    const int pct = all ? static_cast<int>(done * 100 / all) : 100;
    if (total < (64u << 20) || pct == last_pct || (!tty && pct / 10 == last_pct / 10)) return;
    last_pct = pct;
    fmt::print(stderr, "{}synth: {:3d}% of {:.1f} MB", tty ? "\r" : "", pct, static_cast<double>(all) / 1e6);
    if (!tty) fmt::print(stderr, "\n");
  });
  if (tty && last_pct >= 0) fmt::print(stderr, "\n");
  if (!s.ok()) return report(s);
  fmt::print("wrote {}: {} ({}), {} layers, vocab {}, {:.1f} MB of tensors in {:.2f} s\n", out, effective->name,
             mix ? offline::quant_mix_info(*mix).name : ggml_type_name(*type), effective->n_layer, effective->n_vocab, static_cast<double>(total) / 1e6,
             sw.seconds());
  return 0;
}

}  // namespace ridge::cli
