// Synthetic (random-weight) models with the exact tensor shapes and metadata of a real
// checkpoint: real speed figures without a download, and, compared with llama.cpp on the same
// file, a real correctness oracle. Deterministic per seed, whatever the thread count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "gguf/writer.h"
#include "model/config.h"
#include "offline/quant_mix.h"
#include "tensor/ggml_type.h"

namespace ridge::gguf {
class File;
}

namespace ridge::offline {

using model::ModelConfig;

struct SynthOptions {
  GgmlType type = GgmlType::kF16;     // type of the 2-D weight matrices (norms and biases stay f32)
  std::optional<QuantMix> mix;        // a llama.cpp mixture (q4_k_m, ...): per-matrix types, overrides `type`
  uint64_t seed = 1;
  const gguf::File* vocab = nullptr;  // copy its tokenizer; null = built-in byte-level tokenizer
  int n_threads = 2;
};

// llama.cpp's general.file_type value for a weight type (LLAMA_FTYPE_*).
uint32_t file_type_of(GgmlType type);

// Writes the config's hyper-parameters as `<arch>.*` GGUF metadata (the inverse of
// config_from_gguf).
void write_config_metadata(const ModelConfig& cfg, gguf::Writer& w);

// Fills `w` with metadata, tokenizer and every tensor of `cfg` (data generated lazily at write
// time). With a vocabulary whose size differs from cfg.n_vocab, the tokenizer is padded with
// unused tokens (if smaller) or the model takes the vocabulary's size (if larger): the effective
// config is returned.
Result<ModelConfig> build_synthetic_model(const ModelConfig& cfg, const SynthOptions& opt, gguf::Writer& w);

}  // namespace ridge::offline
