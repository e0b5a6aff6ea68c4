// ridge imatrix: an importance matrix over a text file (quality/imatrix.h), written in
// llama-imatrix's GGUF form so either tool's file serves the other's quantizer; --show prints
// one (ridge's or llama.cpp's).
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "base/timer.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "quality/imatrix.h"
#include "quality/perplexity.h"
#include "tokenizer/tokenizer.h"

namespace ridge::cli {
namespace {

struct ImatrixArgs {
  std::string model_path, text_path, out_path = "imatrix.gguf", show_path, isa, kv_type = "f16";
  quality::ImatrixOptions o;
  int n_threads = 0;
  gguf::Backing backing = gguf::Backing::kHugePages;
};

// One line per weight: columns, matrices, rows summed, and the mean squared activation
// (in_sum2 / count) over its columns with the largest.
void print_entries(const quality::Imatrix& im) {
  fmt::print("{:<40} {:>6} {:>4} {:>10} {:>12} {:>12}\n", "weight", "cols", "mats", "rows", "mean x^2", "max x^2");
  for (const auto& [name, e] : im.entries) {
    double sum = 0, max = 0;
    int64_t n = 0;
    for (size_t i = 0; i < e.counts.size(); ++i) {
      if (e.counts[i] == 0) continue;
      for (int64_t j = 0; j < e.n_cols; ++j) {
        const double v = e.in_sum2[i * static_cast<size_t>(e.n_cols) + static_cast<size_t>(j)] / static_cast<double>(e.counts[i]);
        sum += v;
        max = std::max(max, v);
        n += 1;
      }
    }
    int64_t rows = 0;
    for (int64_t c : e.counts) rows += c;
    fmt::print("{:<40} {:>6} {:>4} {:>10} {:>12.5g} {:>12.5g}\n", name, e.n_cols, e.counts.size(), rows,
               n > 0 ? sum / static_cast<double>(n) : 0.0, max);
  }
}

}  // namespace

int cmd_imatrix(int argc, char** argv) {
  CLI::App app{"Importance matrix over a text file (llama-imatrix's method and GGUF file): per weight, the sum of "
               "each input column's squares, for ridge quantize --imatrix or llama-quantize", "imatrix"};
  ImatrixArgs a;
  quality::ImatrixOptions& o = a.o;
  app.add_option("-m,--model", a.model_path, "GGUF model (F32/F16/BF16 for quantizing)");
  app.add_option("-f,--file", a.text_path, "calibration text file");
  app.add_option("-o,--output", a.out_path, "output file")->capture_default_str();
  app.add_option("-c,--ctx-size", o.n_ctx, "tokens per chunk")->capture_default_str();
  app.add_option("-b,--batch-size", o.n_batch, "tokens per forward step")->capture_default_str();
  app.add_option("--chunks", o.n_chunks, "chunks at most (-1: all)")->capture_default_str();
  app.add_flag("--process-output", o.process_output, "also collect output.weight");
  app.add_option("--show", a.show_path, "print an imatrix file (ridge's or llama-imatrix's) and exit");
  app.add_option("-t,--threads", a.n_threads, "threads (default: every CPU)");
  app.add_option("--kv-type", a.kv_type, "KV cache type: f16, bf16, q8_0 or f32")->capture_default_str();
  app.add_option("--isa", a.isa, "force kernels: ref, avx2, avx512");
  add_mmap_flag(app, a.backing);
  if (auto rc = parse(app, argc, argv)) return *rc;
  if (!a.show_path.empty()) {
    auto im = quality::read_imatrix(a.show_path);
    if (!im.ok()) return report(im.status().with_prefix("imatrix"));
    fmt::print("{}: {} entries, {} chunks{}{}\n", a.show_path, im->entries.size(), im->chunk_count,
               im->chunk_size > 0 ? fmt::format(" of {} tokens", im->chunk_size) : " (a legacy file: rows are chunks)",
               im->datasets.empty() ? "" : fmt::format(" from {}", fmt::join(im->datasets, ", ")));
    print_entries(*im);
    return 0;
  }
  if (a.model_path.empty() || a.text_path.empty()) {
    return report(usage_error("imatrix: give the model (-m) and the text (-f), or --show FILE"));
  }
  const auto kt = kv::kv_type_from_name(a.kv_type);
  if (!kt.ok()) return report(kt.status().with_prefix("imatrix"));
  o.kv_type = *kt;
  auto text = read_text_file(a.text_path, "imatrix", "-f");
  if (!text.ok()) return report(text.status());
  auto k = pick_kernels(a.isa);
  if (!k.ok()) return report(k.status());
  auto m = model::Model::load(a.model_path, **k, a.backing);
  if (!m.ok()) return report(m.status());
  auto tok = tokenizer::Tokenizer::from_gguf(m->file());
  if (!tok.ok()) return report(tok.status());
  // The text as llama-imatrix tokenizes it: special tokens added, none parsed.
  std::vector<int32_t> tokens = tok->encode(*text, /*add_special=*/true, /*parse_special=*/false);
  o.bos = quality::chunk_bos(*tok);
  if (a.n_threads <= 0) a.n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(a.n_threads);
  fmt::print(stderr, "imatrix: {} tokens, chunks of {}, {} threads\n", tokens.size(), o.n_ctx, a.n_threads);
  const Stopwatch sw;
  auto im = quality::collect_imatrix(*m, tokens, o, pool, [](int64_t i) {
    fmt::print(stderr, "[{}]", i + 1);
    std::fflush(stderr);
  });
  if (!im.ok()) return report(im.status());
  im->datasets = {a.text_path};
  if (Status s = quality::write_imatrix(*im, a.out_path); !s.ok()) return report(s.with_prefix("imatrix"));
  fmt::print(stderr, "\nimatrix: {} weights over {} chunks of {} tokens in {:.2f} s, written to {}\n", im->entries.size(),
             im->chunk_count, im->chunk_size, sw.seconds(), a.out_path);
  return 0;
}

}  // namespace ridge::cli
