// ridge convert DIR OUT.gguf [--type TYPE]: a Hugging Face checkpoint folder as a GGUF file
// (checkpoint/hf_convert.h, hf_tokenizer.h), quantized with llama.cpp's mixture rules when a
// type is named.
#include <fmt/format.h>

#include <filesystem>

#include "checkpoint/hf_folder.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "gguf/reader.h"
#include "offline/quant_mix.h"
#include "offline/quantize.h"

namespace ridge::cli {
namespace {

namespace fs = std::filesystem;

Status convert(const std::string& dir, const std::string& out, const std::string& type, int threads) {
  if (!fs::is_directory(dir)) return usage_error("convert: {} is not a checkpoint folder", dir);
  RIDGE_ASSIGN_OR_RETURN(const checkpoint::CheckpointFolder folder, checkpoint::CheckpointFolder::open(dir));
  gguf::Writer w;
  RIDGE_RETURN_IF_ERROR(folder.add_to(w).with_prefix("convert"));
  if (type.empty()) return write_gguf(w, out);
  // Quantized: the converted file first (beside the output), then llama.cpp's mixture of it.
  RIDGE_ASSIGN_OR_RETURN(const offline::QuantMix mix, offline::quant_mix_from_name(type));
  const std::string unquantized = out + ".unquantized";
  RIDGE_RETURN_IF_ERROR(write_gguf(w, unquantized));
  auto in = gguf::File::open(unquantized);
  std::error_code ec;
  if (!in.ok()) {
    fs::remove(unquantized, ec);
    return in.status();
  }
  offline::QuantizeOptions opt;
  opt.mix.mix = mix;
  opt.n_threads = threads;
  auto plan = offline::plan_quantization(*in, opt);
  Status s = plan.status();
  if (s.ok()) {
    gguf::Writer q(in->alignment());
    s = offline::add_quantized_model(*in, *plan, threads, q);
    if (s.ok()) s = write_gguf(q, out);
  }
  fs::remove(unquantized, ec);
  return s;
}

}  // namespace

int cmd_convert(int argc, char** argv) {
  CLI::App app("Convert a Hugging Face checkpoint folder (config.json, *.safetensors, tokenizer.json or "
               "tokenizer.model) of a Llama, Qwen2, Qwen3, Qwen3-MoE, Qwen2-MoE, Qwen3.5, Qwen3.5-MoE, "
               "Gemma 2, Gemma 3, Gemma 4 or gpt-oss model into a GGUF file llama.cpp and ridge load; with --type, "
               "quantized with llama.cpp's mixture rules.", "convert");
  std::string dir, out, type;
  int threads = 4;
  app.add_option("dir", dir, "checkpoint folder")->required();
  app.add_option("out", out, "GGUF file to write")->required();
  app.add_option("--type", type, "quantize to this type (q8_0, q4_k_m, ...; ridge quantize --help lists them); "
                 "default: each tensor's own F32/F16/BF16");
  app.add_option("-t,--threads", threads, "threads for quantizing");
  if (auto rc = parse(app, argc, argv)) return *rc;
  if (threads < 1) return report(usage_error("convert: --threads must be at least 1, got {}", threads));
  Stopwatch sw;
  const Status s = convert(dir, out, type, threads);
  if (!s.ok()) return report(s);
  fmt::print("wrote {} ({}) in {:.2f} s\n", out, human_bytes(static_cast<double>(fs::file_size(out))), sw.seconds());
  return 0;
}

}  // namespace ridge::cli
