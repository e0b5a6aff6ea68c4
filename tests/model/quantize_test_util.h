// Helpers of the quantize tests: synthetic F32 models in memory, quantization to memory.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/config.h"
#include "model/quantize.h"
#include "model/synth.h"

namespace ridge::model::quantize_testing {

// A parsed GGUF with the bytes it points into.
struct Synth {
  std::shared_ptr<std::vector<uint8_t>> bytes;
  std::shared_ptr<gguf::File> file;
};

inline Synth parse_bytes(std::vector<uint8_t> data, const std::string& name) {
  Synth s;
  s.bytes = std::make_shared<std::vector<uint8_t>>(std::move(data));
  auto f = gguf::File::parse(*s.bytes, name);
  EXPECT_TRUE(f.ok()) << f.status().message();
  if (f.ok()) s.file = std::make_shared<gguf::File>(std::move(f).value());
  return s;
}

inline Synth synth_with(const ModelConfig& cfg, const SynthOptions& so) {
  gguf::Writer w;
  auto r = build_synthetic_model(cfg, so, w);
  EXPECT_TRUE(r.ok()) << r.status().message();
  auto bytes = w.write_to_memory();
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  return parse_bytes(bytes.ok() ? std::move(bytes).value() : std::vector<uint8_t>{}, cfg.name + ".gguf");
}

inline Synth synth_f32(const ModelConfig& cfg, uint64_t seed) {
  SynthOptions so;
  so.type = GgmlType::kF32;
  so.seed = seed;
  so.n_threads = 2;
  return synth_with(cfg, so);
}

// Small shapes whose rows are multiples of 256, so every K format is used without fallback.
inline ModelConfig wide_config(const std::string& arch) {
  ModelConfig c;
  c.arch = arch;
  c.name = "wide-" + arch;
  c.n_vocab = 512;
  c.n_embd = 256;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_head_kv = 2;
  c.head_dim = 64;
  c.rope_dims = 64;
  c.n_ff = 512;
  c.n_ctx_train = 2048;
  c.tied_embeddings = arch != "llama";
  EXPECT_TRUE(apply_arch_defaults(c).ok());
  return c;
}

struct Quantized {
  QuantizePlan plan;
  std::vector<uint8_t> bytes;
  std::shared_ptr<gguf::File> file;
  Synth keep;
};

inline Quantized quantize(const gguf::File& in, QuantMix mix, int n_threads = 2,
                          std::vector<TensorTypeOverride> overrides = {}) {
  QuantizeOptions opt;
  opt.mix.mix = mix;
  opt.mix.overrides = std::move(overrides);
  opt.n_threads = n_threads;
  Quantized q;
  auto plan = plan_quantization(in, opt);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  if (!plan.ok()) return q;
  q.plan = *plan;
  gguf::Writer w(in.alignment());
  Status s = add_quantized_model(in, q.plan, n_threads, w);
  EXPECT_TRUE(s.ok()) << s.message();
  auto bytes = w.write_to_memory();
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  if (!bytes.ok()) return q;
  q.bytes = *bytes;
  q.keep = parse_bytes(*bytes, "quantized.gguf");
  q.file = q.keep.file;
  return q;
}

}  // namespace ridge::model::quantize_testing
