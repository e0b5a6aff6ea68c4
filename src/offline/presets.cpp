// Shapes of real checkpoints (from their Hugging Face config.json) and tiny test shapes.
#include <cctype>

#include "base/status.h"
#include "offline/presets.h"
#include "model/config.h"

namespace ridge::offline {
namespace {

ModelConfig make(std::string arch, std::string name, int64_t vocab, int64_t embd, int64_t layers,
                 int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t ff, int64_t ctx,
                 float eps, float theta, bool tied) {
  ModelConfig c;
  c.arch = std::move(arch);
  c.name = std::move(name);
  c.n_vocab = vocab;
  c.n_embd = embd;
  c.n_layer = layers;
  c.n_head = heads;
  c.n_head_kv = kv_heads;
  c.head_dim = head_dim;
  c.rope_dims = head_dim;
  c.n_ff = ff;
  c.n_ctx_train = ctx;
  c.rms_eps = eps;
  c.rope_theta = theta;
  c.tied_embeddings = tied;
  Status s = model::apply_arch_defaults(c);
  RIDGE_CHECK(s.ok());
  return c;
}

// A mixture-of-experts shape: `ff` is the dense feed_forward_length the metadata carries.
ModelConfig with_experts(ModelConfig c, int64_t n_expert, int64_t n_used, int64_t ff_exp,
                         int64_t ff_shared = 0) {
  c.n_expert = n_expert;
  c.n_expert_used = n_used;
  c.n_ff_exp = ff_exp;
  c.n_ff_shexp = ff_shared;
  return c;
}

// Qwen3.5's linear-attention layers: Hk q/k heads and Hv v heads of `head` values, conv of 4
// taps; rope on a quarter of each attention head.
ModelConfig with_delta_net(ModelConfig c, int64_t k_heads, int64_t v_heads, int64_t head) {
  c.ssm_n_k_heads = k_heads;
  c.ssm_n_v_heads = v_heads;
  c.ssm_head_dim = head;
  c.ssm_conv_kernel = 4;
  c.rope_dims = c.head_dim / 4;
  return c;
}

ModelConfig with_llama3_scaling(ModelConfig c, float factor) {
  c.rope_scaling = RopeScaling{factor, 1.0f, 4.0f, 8192};
  return c;
}

std::vector<Preset> build() {
  std::vector<Preset> p;
  // name, hf, arch, vocab, embd, layers, heads, kv, head_dim, ff, ctx, eps, theta, tied
  p.push_back({"qwen3-0.6b", "Qwen/Qwen3-0.6B",
               make("qwen3", "qwen3-0.6b", 151936, 1024, 28, 16, 8, 128, 3072, 40960, 1e-6f, 1e6f, true)});
  p.push_back({"qwen3-1.7b", "Qwen/Qwen3-1.7B",
               make("qwen3", "qwen3-1.7b", 151936, 2048, 28, 16, 8, 128, 6144, 40960, 1e-6f, 1e6f, true)});
  p.push_back({"qwen3-4b", "Qwen/Qwen3-4B",
               make("qwen3", "qwen3-4b", 151936, 2560, 36, 32, 8, 128, 9728, 40960, 1e-6f, 1e6f, true)});
  p.push_back({"qwen3-8b", "Qwen/Qwen3-8B",
               make("qwen3", "qwen3-8b", 151936, 4096, 36, 32, 8, 128, 12288, 40960, 1e-6f, 1e6f, false)});
  p.push_back({"qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B",
               with_experts(make("qwen3moe", "qwen3-30b-a3b", 151936, 2048, 48, 32, 4, 128, 6144,
                                 40960, 1e-6f, 1e6f, false), 128, 8, 768)});
  {
    // gpt-oss-20b (openai/gpt-oss-20b config.json): 32 experts of 2880 rows, 4 per token,
    // sliding window 128 on every other layer, YaRN 32x over 4096 positions.
    ModelConfig g = with_experts(make("gpt-oss", "gpt-oss-20b", 201088, 2880, 24, 64, 8, 64,
                                      2880, 131072, 1e-5f, 150000.0f, false), 32, 4, 2880);
    g.n_swa = 128;
    g.yarn.factor = 32.0f;
    g.yarn.original_context = 4096;
    g.rope_freq_scale = 1.0f / 32.0f;
    p.push_back({"gpt-oss-20b", "openai/gpt-oss-20b", g});
  }
  // Gemma 3 (google/gemma-3-*: the text model's config.json): sliding windows of 512 (1B) or
  // 1024 with a rope base of 10000, every sixth layer global with base 1e6, linear rope scaling 8
  // on the global layers of 4B and larger; embeddings tied.
  const auto gemma3 = [](std::string name, int64_t embd, int64_t layers, int64_t heads, int64_t kv,
                         int64_t head_dim, int64_t ff, int64_t ctx, int64_t window, float scaling) {
    ModelConfig g = make("gemma3", std::move(name), 262144, embd, layers, heads, kv, head_dim, ff, ctx,
                         1e-6f, 1e6f, true);
    g.n_swa = window;
    g.rope_theta_swa = 10000.0f;
    g.rope_freq_scale_swa = 1.0f;
    g.rope_freq_scale = 1.0f / scaling;
    return g;
  };
  p.push_back({"gemma-3-1b", "google/gemma-3-1b-pt", gemma3("gemma-3-1b", 1152, 26, 4, 1, 256, 6912, 32768, 512, 1.0f)});
  p.push_back({"gemma-3-4b", "google/gemma-3-4b-pt", gemma3("gemma-3-4b", 2560, 34, 8, 4, 256, 10240, 131072, 1024, 8.0f)});
  p.push_back({"gemma-3-12b", "google/gemma-3-12b-pt", gemma3("gemma-3-12b", 3840, 48, 16, 8, 256, 15360, 131072, 1024, 8.0f)});
  p.push_back({"gemma-3-27b", "google/gemma-3-27b-pt", gemma3("gemma-3-27b", 5376, 62, 32, 16, 128, 21504, 131072, 1024, 8.0f)});
  // Gemma 2 (google/gemma-2-*): even layers on a 4096-position window, logits capped at 30 and
  // attention scores at 50.
  const auto gemma2 = [](std::string name, int64_t embd, int64_t layers, int64_t heads, int64_t kv,
                         int64_t head_dim, int64_t ff) {
    ModelConfig g = make("gemma2", std::move(name), 256000, embd, layers, heads, kv, head_dim, ff, 8192,
                         1e-6f, 10000.0f, true);
    g.n_swa = 4096;
    g.final_logit_softcap = 30.0f;
    g.attn_softcap = 2.0f;
    return g;
  };
  p.push_back({"gemma-2-2b", "google/gemma-2-2b", gemma2("gemma-2-2b", 2304, 26, 8, 4, 256, 9216)});
  p.push_back({"gemma-2-9b", "google/gemma-2-9b", gemma2("gemma-2-9b", 3584, 42, 16, 8, 256, 14336)});
  p.push_back({"gemma-2-27b", "google/gemma-2-27b", gemma2("gemma-2-27b", 4608, 46, 32, 16, 128, 36864)});
  // Qwen3.5 (Qwen/Qwen3.5-*: the text model's config.json): linear-attention layers of 16 q/k
  // heads (16 or 32 v heads) of 128, full attention every fourth layer with heads of 256.
  p.push_back({"qwen3.5-0.8b", "Qwen/Qwen3.5-0.8B",
               with_delta_net(make("qwen35", "qwen3.5-0.8b", 248320, 1024, 24, 8, 2, 256, 3584,
                                   262144, 1e-6f, 1e7f, true), 16, 16, 128)});
  p.push_back({"qwen3.5-9b", "Qwen/Qwen3.5-9B",
               with_delta_net(make("qwen35", "qwen3.5-9b", 248320, 4096, 32, 16, 4, 256, 12288,
                                   262144, 1e-6f, 1e7f, false), 16, 32, 128)});
  p.push_back({"qwen3.5-35b-a3b", "Qwen/Qwen3.5-35B-A3B",
               with_delta_net(with_experts(make("qwen35moe", "qwen3.5-35b-a3b", 248320, 2048, 40, 16,
                                                2, 256, 512, 262144, 1e-6f, 1e7f, false),
                                           256, 8, 512, 512), 16, 32, 128)});
  p.push_back({"qwen2.5-0.5b", "Qwen/Qwen2.5-0.5B",
               make("qwen2", "qwen2.5-0.5b", 151936, 896, 24, 14, 2, 64, 4864, 32768, 1e-6f, 1e6f, true)});
  p.push_back({"qwen2.5-7b", "Qwen/Qwen2.5-7B",
               make("qwen2", "qwen2.5-7b", 152064, 3584, 28, 28, 4, 128, 18944, 32768, 1e-6f, 1e6f, false)});
  p.push_back({"llama-3.2-1b", "meta-llama/Llama-3.2-1B",
               with_llama3_scaling(make("llama", "llama-3.2-1b", 128256, 2048, 16, 32, 8, 64, 8192,
                                        131072, 1e-5f, 500000.0f, true), 32.0f)});
  p.push_back({"llama-3.1-8b", "meta-llama/Llama-3.1-8B",
               with_llama3_scaling(make("llama", "llama-3.1-8b", 128256, 4096, 32, 32, 8, 128, 14336,
                                        131072, 1e-5f, 500000.0f, false), 8.0f)});
  p.push_back({"llama-2-7b", "meta-llama/Llama-2-7b-hf",
               make("llama", "llama-2-7b", 32000, 4096, 32, 32, 32, 128, 11008, 4096, 1e-5f, 10000.0f, false)});
  // Tiny shapes for tests: every architecture feature, seconds to run.
  p.push_back({"tiny-llama", "",
               make("llama", "tiny-llama", 512, 64, 2, 4, 2, 16, 160, 2048, 1e-5f, 10000.0f, false)});
  p.push_back({"tiny-qwen2", "",
               make("qwen2", "tiny-qwen2", 512, 64, 2, 4, 2, 16, 160, 2048, 1e-6f, 1e6f, true)});
  p.push_back({"tiny-qwen3", "",
               make("qwen3", "tiny-qwen3", 512, 64, 2, 4, 2, 32, 160, 2048, 1e-6f, 1e6f, true)});
  // Experts of 64 rows (whole 16-row panels), 2 of 8 per token; qwen2moe adds a shared expert.
  p.push_back({"tiny-qwen3moe", "",
               with_experts(make("qwen3moe", "tiny-qwen3moe", 512, 64, 2, 4, 2, 32, 160, 2048,
                                 1e-6f, 1e6f, true), 8, 2, 64)});
  p.push_back({"tiny-qwen2moe", "",
               with_experts(make("qwen2moe", "tiny-qwen2moe", 512, 64, 2, 4, 2, 16, 160, 2048,
                                 1e-6f, 1e6f, false), 4, 2, 32, 96)});
  {
    // gpt-oss in small: 4 of 8 experts, q_dim (128) != n_embd (64), a window of 8 positions on
    // layers 0 and 2, sinks, biases and YaRN as the real one.
    ModelConfig g = with_experts(make("gpt-oss", "tiny-gpt-oss", 512, 64, 4, 8, 2, 16, 64,
                                      2048, 1e-5f, 150000.0f, false), 8, 4, 64);
    g.n_swa = 8;
    g.yarn.factor = 32.0f;
    g.yarn.original_context = 4096;
    g.rope_freq_scale = 1.0f / 32.0f;
    p.push_back({"tiny-gpt-oss", "", g});
  }
  {
    // gemma3 in small: a window of 8 on layers 0, 1 and 3 (period 3) with their own rope base,
    // layer 2 global with linear scaling 8, GeGLU, post-norms, embedding scale, a logit cap.
    ModelConfig g = make("gemma3", "tiny-gemma3", 512, 64, 4, 4, 2, 32, 160, 2048, 1e-6f, 1e6f, true);
    g.n_swa = 8;
    g.swa_period = 3;
    g.rope_theta_swa = 10000.0f;
    g.rope_freq_scale_swa = 1.0f;
    g.rope_freq_scale = 0.125f;
    g.final_logit_softcap = 30.0f;
    p.push_back({"tiny-gemma3", "", g});
  }
  {
    // gemma2 in small: windows of 8 on layers 0 and 2, attention scores capped at 2 (random
    // weights give scores of a few units: the cap must bite), logits at 30.
    ModelConfig g = make("gemma2", "tiny-gemma2", 512, 64, 4, 4, 2, 32, 160, 2048, 1e-6f, 10000.0f, true);
    g.n_swa = 8;
    g.final_logit_softcap = 30.0f;
    g.attn_softcap = 2.0f;
    p.push_back({"tiny-gemma2", "", g});
  }
  {
    // gemma4 in small: sliding-window layers (0, 1, 3, 5: window 8, head 32, 2 KV heads, rope base
    // 10000 on all 32 dims) and global ones (2, 4, 6: head 64, 1 KV head, base 1e6, a quarter of
    // the pairs rotated through rope_freqs, V taken from K); layers 5 and 6 read the KV of 3
    // and 4 and have a double-wide FFN; per-layer embeddings of 32; output scales; a logit cap.
    ModelConfig g = make("gemma4", "tiny-gemma4", 512, 64, 7, 4, 1, 64, 96, 2048, 1e-6f, 1e6f, true);
    g.n_swa = 8;
    g.swa_layers = {1, 1, 0, 1, 0, 1, 0};
    g.head_dim_swa = 32;
    g.n_head_kv_swa = 2;
    g.rope_dims_swa = 32;
    g.rope_theta_swa = 10000.0f;
    g.rope_freq_scale_swa = 1.0f;
    g.n_kv_shared_layers = 2;
    g.n_ff_layers = {96, 96, 96, 96, 96, 192, 192};
    g.n_embd_per_layer = 32;
    g.final_logit_softcap = 30.0f;
    p.push_back({"tiny-gemma4", "", g});
    // The mixture-of-experts form (as 26B-A4B: no KV sharing, no per-layer embeddings): 5 layers,
    // 8 experts of 32 rows (2 per token, gate and up fused) beside a dense FFN of 64.
    ModelConfig moe = with_experts(g, 8, 2, 32);
    moe.name = "tiny-gemma4moe";
    moe.n_layer = 5;
    moe.swa_layers = {1, 1, 0, 1, 0};
    moe.n_kv_shared_layers = 0;
    moe.n_ff = 64;
    moe.n_ff_layers.clear();
    moe.n_embd_per_layer = 0;
    moe.moe_gemma4 = true;
    moe.moe_norm_topk = true;
    p.push_back({"tiny-gemma4moe", "", moe});
  }
  // Qwen3.5 in small: layers 0-2 and 4-6 linear (2 q/k heads, 4 v heads: v-head j reads q/k
  // head j % 2), 3 and 7 gated full attention with rope on 8 of 32 dims; the MoE form with
  // qwen35moe's shared expert.
  p.push_back({"tiny-qwen35", "",
               with_delta_net(make("qwen35", "tiny-qwen35", 512, 64, 8, 4, 2, 32, 160, 2048, 1e-6f,
                                   1e7f, true), 2, 4, 16)});
  p.push_back({"tiny-qwen35moe", "",
               with_delta_net(with_experts(make("qwen35moe", "tiny-qwen35moe", 512, 64, 4, 4, 2, 32,
                                                160, 2048, 1e-6f, 1e7f, false), 8, 2, 64, 96),
                              2, 4, 16)});
  // The same with an MTP head (one nextn block after the trunk).
  ModelConfig mtp = p[p.size() - 2].config, moe_mtp = p.back().config;
  mtp.name = "tiny-qwen35-mtp";
  moe_mtp.name = "tiny-qwen35moe-mtp";
  mtp.n_nextn_layers = moe_mtp.n_nextn_layers = 1;
  p.push_back({"tiny-qwen35-mtp", "", mtp});
  p.push_back({"tiny-qwen35moe-mtp", "", moe_mtp});
  // Rows of 256 columns and more, for the 256-element formats with no fallback (IQ4_XS): Qwen3
  // with 4 heads of 64 and an FFN of 512.
  p.push_back({"tiny-qwen3-256", "", make("qwen3", "tiny-qwen3-256", 512, 256, 2, 4, 2, 64, 512, 2048, 1e-6f,
                                          1e6f, true)});
  // Llama 3 rope scaling with a short original context (32), so that most rotary frequencies of
  // a 64-token test sequence are scaled or smoothed (rope_freqs.weight).
  ModelConfig llama3 = make("llama", "tiny-llama3", 512, 64, 2, 4, 2, 16, 160, 2048, 1e-5f, 10000.0f, false);
  llama3.rope_scaling = RopeScaling{8.0f, 1.0f, 4.0f, 32};
  p.push_back({"tiny-llama3", "", llama3});
  // YaRN (factor 4 over an original context of 4096): rotary pairs 3-8 of 16 fall in the
  // correction range, the ones after it are interpolated, and cos/sin carry the 1 + 0.1 ln 4 scale.
  ModelConfig yarn = make("qwen3", "tiny-qwen3-yarn", 512, 64, 2, 4, 2, 32, 160, 2048, 1e-6f, 1e6f, true);
  yarn.yarn.factor = 4.0f;
  yarn.yarn.original_context = 4096;
  yarn.rope_freq_scale = 0.25f;
  p.push_back({"tiny-qwen3-yarn", "", yarn});
  return p;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = build();
  return all;
}

Result<ModelConfig> preset_config(std::string_view name) {
  std::string known;
  for (const auto& p : presets()) {
    if (iequals(p.name, name)) return p.config;
    known += known.empty() ? "" : ", ";
    known += p.name;
  }
  return usage_error("unknown model preset '{}' (known: {})", name, known);
}

}  // namespace ridge::offline
