// gpt-oss checkpoints (GptOssForCausalLM) against the GGUF they came from: a synthetic tiny-gpt-oss
// (its experts MXFP4 or BF16, the other matrices BF16 or F32, vectors F32) written out as a Hugging
// Face folder by hf_export_gpt_oss.h (OpenAI's MXFP4 packing, interleaved gate/up rows), converted
// back: the same tensors byte for byte, the metadata the runtime reads and the same logits.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "checkpoint/hf_convert.h"
#include "checkpoint/hf_gpt_oss.h"
#include "checkpoint/safetensors.h"
#include "engine/session.h"
#include "gguf/reader.h"
#include "kernels/kernels.h"
#include "model/config.h"
#include "model/model.h"
#include "model/test_util.h"
#include "hf_export.h"
#include "round_trip_logits.h"
#include "hf_export_gpt_oss.h"

namespace ridge::checkpoint {
namespace gpt_oss_test {

using json = nlohmann::json;
using namespace testing;

const std::vector<int32_t> kTokens = {1, 7, 30, 2, 99, 5, 11, 12, 13, 40};  // past the window of 8


// tiny-gpt-oss with `type` matrices; its experts MXFP4 (from the synth's mxfp4 file) when `mxfp4`;
// with `bf16_values` its F32 tensors rounded to BF16's values (so that a BF16 checkpoint holds them).
std::vector<uint8_t> original_image(const char* type, bool mxfp4, bool bf16_values) {
  gguf::Writer a, q;
  EXPECT_TRUE(model::testing::build_synthetic("tiny-gpt-oss", type, 5, a).ok());
  EXPECT_TRUE(model::testing::build_synthetic("tiny-gpt-oss", "mxfp4", 5, q).ok());
  auto ia = a.write_to_memory(), iq = q.write_to_memory();
  auto fa = gguf::File::parse(*ia, "a.gguf"), fq = gguf::File::parse(*iq, "q.gguf");
  EXPECT_TRUE(fa.ok() && fq.ok());
  return with_experts_of(*fa, mxfp4 ? &*fq : nullptr, bf16_values);
}

struct Converted {
  std::string error;
  std::vector<uint8_t> image;
};

Converted convert(const std::vector<uint8_t>& original, const GptOssExport& opt = {}) {
  auto f = gguf::File::parse(original, "original.gguf");
  EXPECT_TRUE(f.ok());
  auto cfg = model::config_from_gguf(*f);
  EXPECT_TRUE(cfg.ok()) << cfg.status().message();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ridge-gpt-oss-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  write_gpt_oss_checkpoint(*f, *cfg, dir, opt);
  std::ifstream in(dir / "config.json");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  Converted out;
  auto hf = parse_hf_config(text);
  auto set = SafetensorsSet::open_dir(dir.string());
  std::filesystem::remove_all(dir);
  if (!hf.ok()) return {std::string(hf.status().message()), {}};
  EXPECT_TRUE(set.ok()) << set.status().message();
  gguf::Writer w;
  const Status st = convert_checkpoint(*hf, *set, w);
  if (!st.ok()) return {std::string(st.message()), {}};
  auto bytes = w.write_to_memory();
  EXPECT_TRUE(bytes.ok());
  out.image = *bytes;
  return out;
}

struct Case {
  const char* type;
  bool mxfp4;
  bool narrow;  // the checkpoint's vectors in BF16
};
class GptOssRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(GptOssRoundTrip, SameTensorsMetadataAndLogits) {
  const Case c = GetParam();
  const std::vector<uint8_t> image = original_image(c.type, c.mxfp4, c.narrow);
  const Converted conv = convert(image, {.narrow_vectors = c.narrow});
  ASSERT_EQ(conv.error, "");
  auto original = gguf::File::parse(image, "original.gguf");
  auto converted = gguf::File::parse(conv.image, "converted.gguf");
  ASSERT_TRUE(original.ok() && converted.ok());
  ASSERT_EQ(converted->tensors().size(), original->tensors().size());
  for (const gguf::TensorInfo& t : original->tensors()) {
    const gguf::TensorInfo* u = converted->find_tensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->type, t.type) << t.name;
    EXPECT_EQ(u->shape, t.shape) << t.name;
    ASSERT_EQ(u->n_bytes, t.n_bytes) << t.name;
    EXPECT_EQ(std::memcmp(u->data, t.data, t.n_bytes), 0) << t.name << " differs";
  }
  if (c.mxfp4) {
    EXPECT_EQ(converted->find_tensor("blk.1.ffn_up_exps.weight")->type, GgmlType::kMXFP4);
  }
  // What llama.cpp's converter writes for the folder.
  EXPECT_EQ(converted->get_int("gpt-oss.attention.sliding_window").value(), 8);
  EXPECT_EQ(converted->get_int("gpt-oss.expert_feed_forward_length").value(), 64);
  EXPECT_EQ(converted->get_int("gpt-oss.feed_forward_length").value(), 64);
  EXPECT_EQ(converted->get_string("gpt-oss.rope.scaling.type").value(), "yarn");
  EXPECT_EQ(converted->get_int("gpt-oss.rope.scaling.original_context_length").value(), 4096);
  EXPECT_EQ(converted->get_float("gpt-oss.rope.scaling.yarn_beta_fast").value(), 32.0);
  EXPECT_EQ(converted->get_float("gpt-oss.rope.scaling.yarn_beta_slow").value(), 1.0);
  EXPECT_FALSE(converted->has("gpt-oss.attention.sliding_window_pattern"));
  auto cfg = model::config_from_gguf(*original);
  auto cfg2 = model::config_from_gguf(*converted);
  ASSERT_TRUE(cfg.ok() && cfg2.ok()) << cfg2.status().message();
  EXPECT_EQ(cfg2->n_swa, cfg->n_swa);
  EXPECT_EQ(cfg2->swa_period, cfg->swa_period);
  EXPECT_EQ(cfg2->rope_freq_scale, cfg->rope_freq_scale);
  EXPECT_EQ(cfg2->yarn.factor, cfg->yarn.factor);
  EXPECT_EQ(cfg2->yarn.original_context, cfg->yarn.original_context);
  EXPECT_EQ(cfg2->n_expert, cfg->n_expert);
  EXPECT_EQ(cfg2->n_expert_used, cfg->n_expert_used);
  EXPECT_EQ(cfg2->n_ff_exp, cfg->n_ff_exp);
  EXPECT_EQ(cfg2->rms_eps, cfg->rms_eps);
  EXPECT_EQ(cfg2->rope_theta, cfg->rope_theta);
  EXPECT_EQ(cfg2->n_ctx_train, cfg->n_ctx_train);

  const kernels::Kernels& k = kernels::kernels_for(kernels::best_isa());
  auto m1 = model::Model::from_file(std::make_shared<const gguf::File>(std::move(*original)), k);
  auto m2 = model::Model::from_file(std::make_shared<const gguf::File>(std::move(*converted)), k);
  ASSERT_TRUE(m1.ok() && m2.ok());
  const std::vector<float> a = logits_of(*m1, kTokens), b = logits_of(*m2, kTokens);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(Forms, GptOssRoundTrip,
                         ::testing::Values(Case{"bf16", true, false}, Case{"f32", true, false},
                                           Case{"bf16", true, true}, Case{"bf16", false, false},
                                           Case{"f16", false, true}),
                         [](const auto& p) {
                           return std::string(p.param.type) + (p.param.mxfp4 ? "_mxfp4" : "_dequantized") +
                                  (p.param.narrow ? "_bf16_vectors" : "");
                         });

// OpenAI's packing holds values 2j and 2j + 1 in byte j; ggml's byte k values k and k + 16.
TEST(GptOssMxfp4, BlockRepackedAsGgmlReadsIt) {
  uint8_t openai[16], ggml[17];
  for (int j = 0; j < 16; ++j) openai[j] = static_cast<uint8_t>((2 * j) % 16 | ((2 * j + 1) % 16) << 4);
  mxfp4_block_from_openai(0x7f, openai, ggml);  // value v at position v % 16 ... : position p holds p % 16
  EXPECT_EQ(ggml[0], 0x7f);
  for (int k = 0; k < 16; ++k) EXPECT_EQ(ggml[1 + k], static_cast<uint8_t>(k | k << 4)) << k;
  uint8_t ramp[16];  // positions 0..31 hold 0..15, then 15..0
  for (int j = 0; j < 16; ++j) {
    auto v = [](int p) { return p < 16 ? p : 31 - p; };
    ramp[j] = static_cast<uint8_t>(v(2 * j) | v(2 * j + 1) << 4);
  }
  mxfp4_block_from_openai(1, ramp, ggml);
  for (int k = 0; k < 16; ++k) EXPECT_EQ(ggml[1 + k], static_cast<uint8_t>(k | (15 - k) << 4)) << k;
}

TEST(GptOssConvert, RefusesWhatItCannotHonour) {
  const std::vector<uint8_t> image = original_image("bf16", true, false);
  auto refused = [&](GptOssExport opt, const char* needle) {
    const Converted c = convert(image, opt);
    EXPECT_NE(c.error.find(needle), std::string::npos) << "'" << c.error << "' lacks '" << needle << "'";
  };
  refused({.drop = "model.layers.2.mlp.experts.down_proj_scales"}, "model.layers.2.mlp.experts.down_proj_scales");
  refused({.drop = "model.layers.1.mlp.experts.gate_up_proj_blocks"}, "model.layers.1.mlp.experts.gate_up_proj_blocks");
  refused({.drop = "model.layers.3.self_attn.sinks"}, "model.layers.3.self_attn.sinks");
  refused({.drop = "model.layers.0.mlp.router.bias"}, "model.layers.0.mlp.router.bias");
  refused({.drop = "lm_head.weight"}, "lm_head.weight");
  refused({.config_edit = {{"swiglu_limit", 6.0}}}, "swiglu_limit");
  refused({.config_edit = {{"layer_types", json::array({"full_attention", "sliding_attention", "full_attention",
                                                         "sliding_attention"})}}}, "layer_types[0]");
  refused({.config_edit = {{"num_experts_per_tok", 2}}}, "experts_per_token");
  refused({.config_edit = {{"num_local_experts", 4}}}, "shape");  // the experts' stacks are of 8
  refused({.config_edit = {{"sliding_window", nullptr}}}, "sliding_window");
}

}  // namespace gpt_oss_test
}  // namespace ridge::checkpoint
