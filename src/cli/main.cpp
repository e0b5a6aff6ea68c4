// ridge: one executable, one subcommand per job.
#include <fmt/format.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/hf_option.h"

namespace {

struct Command {
  std::string_view name;
  int (*run)(int argc, char** argv);
  std::string_view summary;
};

constexpr Command kCommands[] = {
    {"inspect", ridge::cli::cmd_inspect, "show a GGUF file: hyper-parameters, tensors, bytes per token"},
    {"synth", ridge::cli::cmd_synth, "write a random-weight model with the shape of a real checkpoint"},
    {"run", ridge::cli::cmd_run, "generate text from a prompt (streams; prompt and decode tok/s)"},
    {"chat", ridge::cli::cmd_chat, "interactive multi-turn chat with the model's chat template"},
    {"quantize", ridge::cli::cmd_quantize, "convert an F32/F16/BF16 GGUF to q8_0, q4_k_m, ... (llama.cpp's mixtures)"},
    {"batch", ridge::cli::cmd_batch, "run a JSONL file of requests through the continuous-batching engine"},
    {"tokenize", ridge::cli::cmd_tokenize, "show how a model's tokenizer splits text (ids and pieces)"},
    {"roofline", ridge::cli::cmd_roofline, "what bounds a model on a machine: bytes, FLOPs, ceilings per batch"},
    {"probe", ridge::cli::cmd_probe, "measure this machine's memory bandwidth and peak arithmetic"},
    {"serve", ridge::cli::cmd_serve, "OpenAI-compatible HTTP server (continuous batching, SSE, /metrics)"},
    {"bench", ridge::cli::cmd_bench, "prompt/decode speed, TTFT, latency over batch and context, judged against the roof"},
    {"perplexity", ridge::cli::cmd_perplexity, "a model's perplexity over a text file (llama.cpp's method), KL divergence"},
    {"quality", ridge::cli::cmd_quality, "quality per byte: each quantization's KL divergence, bytes and speed"},
    {"imatrix", ridge::cli::cmd_imatrix, "an importance matrix over a text (llama-imatrix's GGUF file) for quantizing"},
    {"convert", ridge::cli::cmd_convert, "a Hugging Face checkpoint folder (safetensors) as a GGUF file, optionally quantized"},
    {"pull", ridge::cli::cmd_pull, "download a GGUF model from the Hugging Face hub (USER/REPO[:QUANT]) into the cache"},
};

void print_usage(std::FILE* out) {
  fmt::print(out, "usage: ridge <command> [options]   (ridge <command> --help for details)\n\n");
  fmt::print(out, "commands:\n");
  for (const auto& c : kCommands) fmt::print(out, "  {:<10} {}\n", c.name, c.summary);
  fmt::print(out, "\nEvery command that takes -m FILE also takes -hf USER/REPO[:QUANT] (see ridge pull --help).\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(stdout);
    return 0;
  }
  if (name == "--version") {
    fmt::print("ridge 0.1.0\n");
    return 0;
  }
  for (const auto& c : kCommands) {
    if (c.name != name) continue;
    if (name == "pull") return c.run(argc - 1, argv + 1);
    auto args = ridge::cli::expand_hf_option(name, argc - 1, argv + 1);
    if (!args.ok()) {
      fmt::print(stderr, "ridge: error: {}\n", args.status().message());
      return args.status().exit_code();
    }
    std::vector<char*> ptrs;
    for (auto& a : *args) ptrs.push_back(a.data());
    ptrs.push_back(nullptr);
    return c.run(static_cast<int>(args->size()), ptrs.data());
  }
  fmt::print(stderr, "ridge: error: unknown command '{}' (see ridge --help)\n", name);
  return 2;
}
