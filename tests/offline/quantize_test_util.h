// Helpers of the quantize tests: synthetic F32 models in memory, quantization to memory.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/config.h"
#include "offline/presets.h"
#include "offline/quantize.h"
#include "offline/synth.h"

namespace ridge::offline::quantize_testing {

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

// A mixture-of-experts F32 model (qwen3moe / qwen2moe): the dense synthetic model of the same
// attention shape (synth_f32 of the dense architecture), its metadata under the MoE architecture's
// keys plus the expert keys, and each layer's ffn_gate / ffn_up / ffn_down replaced by the router
// ffn_gate_inp [n_embd, n_expert] (f32), the 3-D expert stacks ffn_{gate,up}_exps
// [n_embd, n_ff_exp, n_expert] and ffn_down_exps [n_ff_exp, n_embd, n_expert], and for
// cfg.n_ff_shexp > 0 the shared expert (ffn_gate_inp_shexp [n_embd], ffn_{gate,up,down}_shexp).
// Expert weights are uniform with the variance 1/fan_in, deterministic in `seed`.
inline Synth synth_moe_f32(const ModelConfig& moe, uint64_t seed) {
  const std::string moe_arch = moe.arch;
  const std::string dense_arch = moe_arch == "qwen2moe" ? "qwen2" : "qwen3";
  ModelConfig dense = moe;
  dense.arch = dense_arch;
  dense.n_expert = dense.n_expert_used = dense.n_ff_exp = dense.n_ff_shexp = 0;
  EXPECT_TRUE(apply_arch_defaults(dense).ok());
  const Synth base = synth_f32(dense, seed);
  if (!base.file) return base;

  gguf::Writer w(base.file->alignment());
  for (const auto& [key, value] : base.file->metadata()) {
    std::string k = key;
    if (k.starts_with(dense_arch + ".")) k = moe_arch + k.substr(dense_arch.size());
    w.set(k, value);
  }
  w.set("general.architecture", gguf::make_string(moe_arch));
  w.set(moe_arch + ".expert_count", gguf::make_u32(static_cast<uint32_t>(moe.n_expert)));
  w.set(moe_arch + ".expert_used_count", gguf::make_u32(static_cast<uint32_t>(moe.n_expert_used)));
  w.set(moe_arch + ".expert_feed_forward_length", gguf::make_u32(static_cast<uint32_t>(moe.n_ff_exp)));
  if (moe.n_ff_shexp > 0) {
    w.set(moe_arch + ".expert_shared_feed_forward_length", gguf::make_u32(static_cast<uint32_t>(moe.n_ff_shexp)));
  }
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto add_random = [&](const std::string& name, std::vector<uint64_t> shape, double fan_in) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    std::vector<float> v(n);
    const double a = std::sqrt(3.0 / fan_in);  // uniform [-a, a]: variance 1 / fan_in
    for (auto& x : v) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      x = static_cast<float>(a * (2.0 * static_cast<double>(state >> 11) / 9007199254740992.0 - 1.0));
    }
    EXPECT_TRUE(w.add_tensor_data(name, GgmlType::kF32, std::move(shape),
                                  std::span(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)))
                    .ok()) << name;
  };
  const auto d = static_cast<uint64_t>(moe.n_embd), e = static_cast<uint64_t>(moe.n_expert);
  const auto ff = static_cast<uint64_t>(moe.n_ff_exp), sff = static_cast<uint64_t>(moe.n_ff_shexp);
  for (const auto& t : base.file->tensors()) {
    if (t.name.ends_with(".ffn_gate.weight") || t.name.ends_with(".ffn_up.weight") ||
        t.name.ends_with(".ffn_down.weight")) {
      continue;
    }
    EXPECT_TRUE(w.add_tensor_data(t.name, t.type, t.shape, std::span(t.data, t.n_bytes)).ok()) << t.name;
    if (!t.name.ends_with(".ffn_norm.weight")) continue;
    const std::string p = t.name.substr(0, t.name.size() - std::string("ffn_norm.weight").size());
    add_random(p + "ffn_gate_inp.weight", {d, e}, static_cast<double>(d) / 16);  // a decisive router
    add_random(p + "ffn_gate_exps.weight", {d, ff, e}, static_cast<double>(d));
    add_random(p + "ffn_up_exps.weight", {d, ff, e}, static_cast<double>(d));
    add_random(p + "ffn_down_exps.weight", {ff, d, e}, static_cast<double>(ff));
    if (sff > 0) {
      add_random(p + "ffn_gate_inp_shexp.weight", {d}, static_cast<double>(d));
      add_random(p + "ffn_gate_shexp.weight", {d, sff}, static_cast<double>(d));
      add_random(p + "ffn_up_shexp.weight", {d, sff}, static_cast<double>(d));
      add_random(p + "ffn_down_shexp.weight", {sff, d}, static_cast<double>(sff));
    }
  }
  auto bytes = w.write_to_memory();
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  return parse_bytes(bytes.ok() ? std::move(bytes).value() : std::vector<uint8_t>{}, moe.name + ".gguf");
}

// A small mixture-of-experts shape with 256-wide rows (every K format without fallback): 4 layers,
// experts of 256 rows, 2 per token; qwen3moe has 8 experts (so llama.cpp's 8-expert rules apply),
// qwen2moe 4, a shared expert of 512 rows and its own output head.
inline ModelConfig wide_moe_config(const std::string& arch) {
  ModelConfig c = wide_config(arch == "qwen2moe" ? "qwen2" : "qwen3");
  c.arch = arch;
  c.name = "wide-" + arch;
  c.n_layer = 4;
  c.n_expert = arch == "qwen2moe" ? 4 : 8;
  c.n_expert_used = 2;
  c.n_ff_exp = 256;
  c.n_ff_shexp = arch == "qwen2moe" ? 512 : 0;
  c.tied_embeddings = arch != "qwen2moe";  // llama.cpp's qwen2moe needs output.weight
  EXPECT_TRUE(apply_arch_defaults(c).ok());
  return c;
}

// gpt-oss in small with rows of 256 (tiny-gpt-oss's window, sinks, biases and YaRN; 8 experts,
// 4 per token), written by the synthesizer itself (its MoE and gpt-oss tensors).
inline ModelConfig wide_gpt_oss_config() {
  ModelConfig c;
  for (const Preset& p : presets()) {
    if (p.name == "tiny-gpt-oss") c = p.config;
  }
  EXPECT_EQ(c.arch, "gpt-oss");
  c.name = "wide-gpt-oss";
  c.n_embd = 256;
  c.n_head = 4;
  c.head_dim = c.rope_dims = 64;
  c.n_ff = c.n_ff_exp = 256;
  return c;
}

// Qwen3.5 in small with rows of 256 (tiny-qwen35's / tiny-qwen35moe's linear layers, gated
// attention and partial rope; 8 layers, 2 of them attention), written by the synthesizer.
inline ModelConfig wide_qwen35_config(const std::string& preset) {
  ModelConfig c;
  for (const Preset& p : presets()) {
    if (p.name == preset) c = p.config;
  }
  EXPECT_TRUE(c.is_hybrid());
  c.name = "wide-" + c.arch;
  c.n_embd = 256;
  c.n_head = 4;
  c.head_dim = 64;
  c.rope_dims = 16;
  c.n_ff = 512;
  c.ssm_head_dim = 64;
  if (c.is_moe()) c.n_ff_exp = c.n_ff_shexp = 256;
  return c;
}

struct Quantized {
  QuantizePlan plan;
  std::vector<uint8_t> bytes;
  std::shared_ptr<gguf::File> file;
  Synth keep;
};

inline Quantized quantize(const gguf::File& in, QuantMix mix, int n_threads = 2,
                          std::vector<TensorTypeOverride> overrides = {}, const ImportanceMap* importance = nullptr) {
  QuantizeOptions opt;
  opt.mix.mix = mix;
  opt.mix.overrides = std::move(overrides);
  opt.n_threads = n_threads;
  opt.importance = importance;
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

// An importance matrix for every 2-D weight of `in`: per column a log-normal (sigma 1) value, as
// activations' mean squares spread; deterministic in `seed`.
inline ImportanceMap random_importance(const gguf::File& in, uint64_t seed) {
  ImportanceMap map;
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 7;
  auto uniform = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (static_cast<double>(state >> 11) + 0.5) / 9007199254740992.0;
  };
  for (const auto& t : in.tensors()) {
    if (t.shape.size() != 2 || !t.name.ends_with(".weight")) continue;
    ColumnImportance c;
    c.n_cols = static_cast<int64_t>(t.shape[0]);
    std::vector<float> col(t.shape[0]);
    for (float& v : col) {  // exp(N(0, 1)) by Box-Muller
      v = static_cast<float>(std::exp(std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform())));
    }
    c.matrices.push_back(std::move(col));
    map.emplace(t.name, std::move(c));
  }
  return map;
}

}  // namespace ridge::offline::quantize_testing
