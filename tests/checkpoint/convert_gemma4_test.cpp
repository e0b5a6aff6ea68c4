// Gemma 4 checkpoints (Gemma4ForCausalLM, Gemma4ForConditionalGeneration) against the GGUF they
// came from: synthetic tiny-gemma4 (KV-sharing layers, per-layer embeddings, double-wide FFNs,
// global layers of their own head size and KV heads with proportional rope) and tiny-gemma4moe
// written out as Hugging Face folders by hf_export_gemma4.h, converted back: the same tensors
// byte for byte (rope_freqs rebuilt from partial_rotary_factor), the metadata the runtime reads
// and the same logits; and what convert refuses.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "checkpoint/hf_convert.h"
#include "checkpoint/safetensors.h"
#include "engine/session.h"
#include "gguf/reader.h"
#include "kernels/kernels.h"
#include "model/config.h"
#include "model/model.h"
#include "model/test_util.h"
#include "hf_export.h"
#include "round_trip_logits.h"
#include "hf_export_gemma4.h"

namespace ridge::checkpoint {
namespace gemma4_test {

using json = nlohmann::json;
using namespace testing;

const std::vector<int32_t> kTokens = {1, 7, 30, 2, 99, 5, 11, 12, 13, 40};  // past the window of 8


// The preset with `type` matrices; with `bf16_values` its F32 tensors but rope_freqs rounded to
// BF16's values (so that a BF16 checkpoint holds them).
std::vector<uint8_t> original_image(const char* preset, const char* type, bool bf16_values) {
  gguf::Writer a;
  EXPECT_TRUE(model::testing::build_synthetic(preset, type, 5, a).ok());
  auto ia = a.write_to_memory();
  auto fa = gguf::File::parse(*ia, "a.gguf");
  EXPECT_TRUE(fa.ok());
  gguf::Writer w;
  for (const auto& [key, value] : fa->metadata()) w.set(key, value);
  for (const gguf::TensorInfo& t : fa->tensors()) {
    std::vector<uint8_t> data(t.data, t.data + t.n_bytes);
    if (bf16_values && t.type == GgmlType::kF32 && t.name != "rope_freqs.weight") {
      for (size_t i = 0; i < data.size(); i += 4) data[i] = data[i + 1] = 0;
    }
    EXPECT_TRUE(w.add_tensor_data(t.name, t.type, t.shape, data).ok());
  }
  auto image = w.write_to_memory();
  EXPECT_TRUE(image.ok());
  return image.ok() ? *image : std::vector<uint8_t>{};
}

struct Converted {
  std::string error;
  std::vector<uint8_t> image;
};

Converted convert(const std::vector<uint8_t>& original, const Gemma4Export& opt = {}) {
  auto f = gguf::File::parse(original, "original.gguf");
  EXPECT_TRUE(f.ok());
  auto cfg = model::config_from_gguf(*f);
  EXPECT_TRUE(cfg.ok()) << cfg.status().message();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ridge-gemma4-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  write_gemma4_checkpoint(*f, *cfg, dir, opt);
  std::ifstream in(dir / "config.json");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
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
  return {"", *bytes};
}

struct Case {
  const char* preset;
  const char* type;
  bool narrow;      // the checkpoint's vectors in BF16
  bool multimodal;  // Gemma4ForConditionalGeneration
};
class Gemma4RoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(Gemma4RoundTrip, SameTensorsMetadataAndLogits) {
  const Case c = GetParam();
  const std::vector<uint8_t> image = original_image(c.preset, c.type, c.narrow);
  const Converted conv = convert(image, {.multimodal = c.multimodal, .narrow_vectors = c.narrow});
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
  // The per-layer metadata as the synthetic file (and llama.cpp's converter) writes it.
  for (const char* key : {"attention.sliding_window_pattern", "attention.head_count_kv", "feed_forward_length"}) {
    const std::string k = std::string("gemma4.") + key;
    ASSERT_EQ(converted->has(k), original->has(k)) << k;
    if (!original->has(k)) continue;
    if (std::string(key) == "attention.sliding_window_pattern") {
      EXPECT_EQ(converted->get_bool_array(k).value(), original->get_bool_array(k).value()) << k;
    } else {  // a scalar, or one value per layer (as llama.cpp's converter writes each)
      const bool array = original->find(k)->as_array() != nullptr;
      ASSERT_EQ(converted->find(k)->as_array() != nullptr, array) << k;
      if (array) {
        EXPECT_EQ(converted->get_int_array(k).value(), original->get_int_array(k).value()) << k;
      } else {
        EXPECT_EQ(converted->get_int(k).value(), original->get_int(k).value()) << k;
      }
    }
  }
  for (const char* key : {"attention.key_length", "attention.key_length_swa", "attention.value_length_swa",
                          "rope.dimension_count", "rope.dimension_count_swa", "attention.shared_kv_layers",
                          "embedding_length_per_layer_input", "attention.sliding_window", "context_length"}) {
    const std::string k = std::string("gemma4.") + key;
    EXPECT_EQ(converted->get_int(k).value(), original->get_int(k).value()) << k;
  }
  for (const char* key : {"rope.freq_base", "rope.freq_base_swa", "final_logit_softcapping"}) {
    const std::string k = std::string("gemma4.") + key;
    EXPECT_EQ(converted->get_float(k).value(), original->get_float(k).value()) << k;
  }
  auto cfg = model::config_from_gguf(*original);
  auto cfg2 = model::config_from_gguf(*converted);
  ASSERT_TRUE(cfg.ok() && cfg2.ok()) << cfg2.status().message();
  EXPECT_EQ(cfg2->swa_layers, cfg->swa_layers);
  EXPECT_EQ(cfg2->n_ff_layers, cfg->n_ff_layers);
  EXPECT_EQ(cfg2->n_head_kv, cfg->n_head_kv);
  EXPECT_EQ(cfg2->n_head_kv_swa, cfg->n_head_kv_swa);
  EXPECT_EQ(cfg2->head_dim_swa, cfg->head_dim_swa);
  EXPECT_EQ(cfg2->n_kv_shared_layers, cfg->n_kv_shared_layers);
  EXPECT_EQ(cfg2->n_expert, cfg->n_expert);
  EXPECT_EQ(cfg2->n_expert_used, cfg->n_expert_used);
  EXPECT_EQ(cfg2->n_ff_exp, cfg->n_ff_exp);
  EXPECT_EQ(cfg2->rms_eps, cfg->rms_eps);

  const kernels::Kernels& k = kernels::kernels_for(kernels::best_isa());
  auto m1 = model::Model::from_file(std::make_shared<const gguf::File>(std::move(*original)), k);
  auto m2 = model::Model::from_file(std::make_shared<const gguf::File>(std::move(*converted)), k);
  ASSERT_TRUE(m1.ok() && m2.ok()) << (m2.ok() ? "" : m2.status().message());
  const std::vector<float> a = logits_of(*m1, kTokens), b = logits_of(*m2, kTokens);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(Forms, Gemma4RoundTrip,
                         ::testing::Values(Case{"tiny-gemma4", "f32", false, false},
                                           Case{"tiny-gemma4", "bf16", true, true},
                                           Case{"tiny-gemma4moe", "bf16", false, false},
                                           Case{"tiny-gemma4moe", "f16", true, true}),
                         [](const auto& p) {
                           std::string name = std::string(p.param.preset).substr(5) + "_" + p.param.type;
                           return name + (p.param.narrow ? "_bf16_vectors" : "") + (p.param.multimodal ? "_multimodal" : "");
                         });

TEST(Gemma4Convert, RefusesWhatItCannotHonour) {
  const std::vector<uint8_t> dense = original_image("tiny-gemma4", "bf16", false);
  const std::vector<uint8_t> moe = original_image("tiny-gemma4moe", "bf16", false);
  auto refused = [&](const std::vector<uint8_t>& image, Gemma4Export opt, const char* needle) {
    const Converted c = convert(image, opt);
    EXPECT_NE(c.error.find(needle), std::string::npos) << "'" << c.error << "' lacks '" << needle << "'";
  };
  refused(dense, {.drop = "model.embed_tokens.weight"}, "embed_tokens");
  refused(dense, {.config_edit = {{"global_head_dim", nullptr}}}, "global_head_dim");
  refused(dense, {.config_edit = {{"layer_types", json::array({"sliding_attention"})}}}, "layer_types");
  refused(dense, {.config_edit = {{"layer_types", {{"x", 1}}}}}, "layer_types");
  refused(dense, {.config_edit = {{"attn_logit_softcapping", 50.0}}}, "soft-capping");
  refused(dense, {.config_edit = {{"rope_parameters", {{"full_attention", {{"rope_type", "yarn"}}}}}}},
          "full_attention.rope_type");
  refused(dense, {.config_edit = {{"rope_parameters", nullptr}}}, "rope_parameters");
  refused(dense, {.config_edit = {{"per_layer_config", {{"0", {{"head_dim", 64}}}}}}}, "per_layer_config");
  refused(moe, {.config_edit = {{"enable_moe_block", false}}}, "is not one a Gemma4ForCausalLM checkpoint holds");
  refused(moe, {.config_edit = {{"num_experts", nullptr}}}, "num_experts");
  refused(moe, {.config_edit = {{"top_k_experts", 9}}}, "top_k_experts");
}

TEST(Gemma4Convert, TensorNames) {
  HfConfig c;
  c.hf_architecture = "Gemma4ForConditionalGeneration";
  c.gguf_arch = "gemma4";
  c.n_layer = 2;
  EXPECT_EQ(gguf_tensor_name(c, "model.language_model.layers.1.layer_scalar").value(), "blk.1.layer_output_scale.weight");
  EXPECT_EQ(gguf_tensor_name(c, "model.layers.0.pre_feedforward_layernorm.weight").value(), "blk.0.ffn_norm.weight");
  EXPECT_EQ(gguf_tensor_name(c, "model.language_model.embed_tokens_per_layer.weight").value(), "per_layer_token_embd.weight");
  EXPECT_FALSE(gguf_tensor_name(c, "model.language_model.layers.2.layer_scalar").ok());  // past the layers
  EXPECT_FALSE(gguf_tensor_name(c, "model.language_model.layers.0.router.proj.weight").ok());  // no experts
  EXPECT_FALSE(gguf_tensor_name(c, "model.vision_tower.encoder.layers.0.mlp.gate_proj.weight").ok());
  c.n_expert = 4;
  EXPECT_EQ(gguf_tensor_name(c, "model.language_model.layers.0.router.per_expert_scale").value(), "blk.0.ffn_down_exps.scale");
}

}  // namespace gemma4_test
}  // namespace ridge::checkpoint
