// ridge perplexity: a model's perplexity over a text file, by llama.cpp's method and printed as
// llama-perplexity prints it (quality/perplexity.h), so the two numbers compare. --save-logits
// keeps the base model's distributions in llama-perplexity's file format; --kl-divergence reads
// such a file (ridge's or llama.cpp's) and reports another model's divergence from it
// (quality/kld.h).
#include <fmt/format.h>

#include <optional>
#include <thread>

#include "base/timer.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "kv/kv_cache.h"
#include "quality/kld.h"
#include "quality/log_prob_file.h"
#include "quality/perplexity.h"
#include "tokenizer/tokenizer.h"

namespace ridge::cli {
namespace {

struct Args {
  std::string model_path, text_path, isa, kv_type = "f16", save_path, kld_path;
  quality::PerplexityOptions o;
  int n_threads = 0;
  gguf::Backing backing = gguf::Backing::kHugePages;
};

Status check(const Args& a, const CLI::App& app) {
  RIDGE_RETURN_IF_ERROR(quality::check_options(a.o).with_prefix("perplexity"));
  if (a.kld_path.empty() == a.text_path.empty()) {
    return usage_error("perplexity: give the text (-f) or a base model's log-probabilities (--kl-divergence), one of them");
  }
  if (!a.kld_path.empty() && (!a.save_path.empty() || app.count("-c") > 0)) {
    return usage_error("perplexity: --kl-divergence takes the text and the context from its file (no -c, no --save-logits)");
  }
  return ok_status();
}

}  // namespace

int cmd_perplexity(int argc, char** argv) {
  CLI::App app{"Perplexity of a model over a text file (llama.cpp's method: chunks of -c tokens, "
               "the second half of each scored); KL divergence from a base model's saved distributions", "perplexity"};
  Args a;
  quality::PerplexityOptions& o = a.o;
  app.add_option("-m,--model", a.model_path, "GGUF model")->required();
  app.add_option("-f,--file", a.text_path, "text file");
  app.add_option("-c,--ctx-size", o.n_ctx, "tokens per chunk")->capture_default_str();
  app.add_option("--chunks", o.n_chunks, "chunks to score at most (-1: all)")->capture_default_str();
  app.add_option("-b,--batch-size", o.n_batch, "tokens per forward step")->capture_default_str();
  app.add_option("--save-logits", a.save_path, "write the scored positions' log-probabilities here (llama-perplexity's --kl-divergence-base format)");
  app.add_option("--kl-divergence", a.kld_path, "a base model's saved log-probabilities (ridge's --save-logits or llama-perplexity's --kl-divergence-base): report this model's KL divergence from it, on its tokens");
  app.add_option("-t,--threads", a.n_threads, "threads (default: every CPU)");
  app.add_option("--kv-type", a.kv_type, "KV cache type: f16, bf16, q8_0 or f32")->capture_default_str();
  app.add_option("--isa", a.isa, "force kernels: ref, avx2, avx512");
  add_mmap_flag(app, a.backing);
  if (auto rc = parse(app, argc, argv)) return *rc;
  if (Status s = check(a, app); !s.ok()) return report(s);
  const auto kt = kv::kv_type_from_name(a.kv_type);
  if (!kt.ok()) return report(kt.status().with_prefix("perplexity"));
  o.kv_type = *kt;
  std::optional<quality::LogProbReader> base;
  std::string text;
  if (!a.kld_path.empty()) {
    auto r = quality::LogProbReader::open(a.kld_path);
    if (!r.ok()) return report(r.status().with_prefix("perplexity"));
    base.emplace(std::move(r).value());
    o.n_ctx = base->header().n_ctx;
  } else {
    auto t = read_text_file(a.text_path, "perplexity", "-f");
    if (!t.ok()) return report(t.status());
    text = std::move(t).value();
  }
  auto k = pick_kernels(a.isa);
  if (!k.ok()) return report(k.status());
  auto m = model::Model::load(a.model_path, **k, a.backing);
  if (!m.ok()) return report(m.status());
  auto tok = tokenizer::Tokenizer::from_gguf(m->file());
  if (!tok.ok()) return report(tok.status());
  const auto n_vocab = static_cast<int32_t>(m->config().n_vocab);
  std::vector<int32_t> tokens;
  if (base) {
    if (base->header().n_vocab != n_vocab) {
      return report(usage_error("perplexity: {} was written for a vocabulary of {} tokens, this model has {}", a.kld_path,
                                base->header().n_vocab, n_vocab));
    }
    tokens = base->header().tokens;
  } else {
    auto t = quality::text_tokens(*tok, text, o);
    if (!t.ok()) return report(t.status().with_prefix("perplexity"));
    tokens = std::move(t).value();
  }
  o.bos = quality::chunk_bos(*tok);  // as llama.cpp: each chunk starts with it
  if (a.n_threads <= 0) a.n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(a.n_threads);
  fmt::print(stderr, "perplexity: {} tokens, chunks of {}, {} threads\n", tokens.size(), o.n_ctx, a.n_threads);

  const int64_t n_chunks = quality::chunk_count(static_cast<int64_t>(tokens.size()), o);
  std::vector<uint16_t> row(static_cast<size_t>(quality::log_prob_row_width(n_vocab)));
  std::optional<quality::LogProbWriter> save;
  if (!a.save_path.empty()) {
    quality::LogProbHeader h;
    h.n_ctx = static_cast<uint32_t>(o.n_ctx);
    h.n_vocab = n_vocab;
    h.n_chunk = static_cast<int32_t>(n_chunks);
    h.tokens.assign(tokens.begin(), tokens.begin() + n_chunks * o.n_ctx);
    auto w = quality::LogProbWriter::create(a.save_path, h);
    if (!w.ok()) return report(w.status().with_prefix("perplexity"));
    save.emplace(std::move(w).value());
  }
  quality::KldStats kld;
  const quality::ScoredRow on_row = [&](std::span<const float> logits, int32_t next) -> Status {
    if (save) {
      quality::compress_log_probs(logits, next, row);
      return save->write_row(row);
    }
    if (base) {
      RIDGE_RETURN_IF_ERROR(base->read_row(row));
      kld.add(logits, row, next);
    }
    return ok_status();
  };
  if (base) fmt::print("chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p\n");
  const Stopwatch sw;
  auto r = quality::perplexity(*m, tokens, o, pool, [&](int64_t i, double ppl) {
    if (base) {
      fmt::print("{}\n", kld.chunk_line(i + 1));
    } else {
      fmt::print("[{}]{:.4f},", i + 1, ppl);
    }
    std::fflush(stdout);
  }, (save || base) ? on_row : quality::ScoredRow{});
  if (!r.ok()) return report(r.status());
  if (save) {
    if (Status s = save->close(); !s.ok()) return report(s);
  }
  const double seconds = sw.seconds();
  if (base) {
    fmt::print("\n{}", kld.report());
  } else {
    fmt::print("\nFinal estimate: PPL = {:.4f} +/- {:.5f}\n", r->ppl, r->ppl_error);
  }
  fmt::print(stderr, "perplexity: {} chunks, {} tokens scored, {:.2f} s ({:.1f} tokens/s evaluated){}\n", r->n_chunks,
             r->n_scored, seconds, static_cast<double>(r->n_chunks * o.n_ctx) / seconds,
             save ? fmt::format(", log-probabilities written to {}", a.save_path) : "");
  return 0;
}

}  // namespace ridge::cli
