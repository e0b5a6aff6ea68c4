// ridge perplexity: a model's perplexity over a text file, by llama.cpp's method and printed as
// llama-perplexity prints it (quality/perplexity.h), so the two numbers compare.
#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "base/timer.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "kv/kv_cache.h"
#include "quality/perplexity.h"
#include "tokenizer/tokenizer.h"

namespace ridge::cli {

int cmd_perplexity(int argc, char** argv) {
  CLI::App app{"Perplexity of a model over a text file (llama.cpp's method: chunks of -c tokens, "
               "the second half of each scored)", "perplexity"};
  std::string model_path, text_path, isa, kv_type = "f16";
  quality::PerplexityOptions o;
  int n_threads = 0;
  gguf::Backing backing = gguf::Backing::kHugePages;
  app.add_option("-m,--model", model_path, "GGUF model")->required();
  app.add_option("-f,--file", text_path, "text file")->required();
  app.add_option("-c,--ctx-size", o.n_ctx, "tokens per chunk")->capture_default_str();
  app.add_option("--chunks", o.n_chunks, "chunks to score at most (-1: all)")->capture_default_str();
  app.add_option("-b,--batch-size", o.n_batch, "tokens per forward step")->capture_default_str();
  app.add_option("-t,--threads", n_threads, "threads (default: every CPU)");
  app.add_option("--kv-type", kv_type, "KV cache type: f16, bf16, q8_0 or f32")->capture_default_str();
  app.add_option("--isa", isa, "force kernels: ref, avx2, avx512");
  add_mmap_flag(app, backing);
  if (auto rc = parse(app, argc, argv)) return *rc;
  if (o.n_ctx < 4 || o.n_ctx > (1 << 20)) return report(usage_error("perplexity: -c {} is outside 4..{}", o.n_ctx, 1 << 20));
  if (o.n_batch < 1) return report(usage_error("perplexity: -b must be at least 1, got {}", o.n_batch));
  if (o.n_chunks < -1 || o.n_chunks == 0) return report(usage_error("perplexity: --chunks must be -1 or positive, got {}", o.n_chunks));
  const auto kt = kv::kv_type_from_name(kv_type);
  if (!kt.ok()) return report(kt.status().with_prefix("perplexity"));
  o.kv_type = *kt;
  std::ifstream f(text_path, std::ios::binary);
  if (!f) return report(usage_error("perplexity: cannot open -f '{}'", text_path));
  std::stringstream text;
  text << f.rdbuf();
  auto k = pick_kernels(isa);
  if (!k.ok()) return report(k.status());
  auto m = model::Model::load(model_path, **k, backing);
  if (!m.ok()) return report(m.status());
  auto tok = tokenizer::Tokenizer::from_gguf(m->file());
  if (!tok.ok()) return report(tok.status());
  const Stopwatch tokenizing;
  const std::vector<int32_t> tokens = tok->encode(text.str(), /*add_special=*/true, /*parse_special=*/false);
  // As llama.cpp: each chunk starts with BOS where the vocabulary adds one.
  if (tok->add_bos() && tok->bos() >= 0) o.bos = tok->bos();
  if (static_cast<int64_t>(tokens.size()) < 2 * o.n_ctx) {
    return report(usage_error("perplexity: the text has {} tokens; a context of {} needs at least {}", tokens.size(),
                              o.n_ctx, 2 * o.n_ctx));
  }
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(n_threads);
  fmt::print(stderr, "perplexity: {} tokens ({:.2f} s to tokenize), chunks of {}, {} threads\n", tokens.size(),
             tokenizing.seconds(), o.n_ctx, n_threads);
  const Stopwatch sw;
  auto r = quality::perplexity(*m, tokens, o, pool, [](int64_t i, double ppl) {
    fmt::print("[{}]{:.4f},", i + 1, ppl);
    std::fflush(stdout);
  });
  if (!r.ok()) return report(r.status());
  const double seconds = sw.seconds();
  fmt::print("\nFinal estimate: PPL = {:.4f} +/- {:.5f}\n", r->ppl, r->ppl_error);
  fmt::print(stderr, "perplexity: {} chunks, {} tokens scored, {:.2f} s ({:.1f} tokens/s evaluated)\n", r->n_chunks,
             r->n_scored, seconds, static_cast<double>(r->n_chunks * o.n_ctx) / seconds);
  return 0;
}

}  // namespace ridge::cli
