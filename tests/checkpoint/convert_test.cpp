// ridge's checkpoint conversion against the GGUF a checkpoint came from: a synthetic GGUF of each
// architecture is written out as a Hugging Face folder by this test (Hugging Face's tensor names,
// config.json fields and query/key row order, typed here from those conventions, not taken from
// the converter), converted back, and must give the same tensors byte for byte, the same
// configuration and the same logits.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/hf_convert.h"
#include "checkpoint/safetensors.h"
#include "engine/session.h"
#include "gguf/reader.h"
#include "kernels/kernels.h"
#include "model/config.h"
#include "model/model.h"
#include "model/test_util.h"
#include "offline/presets.h"
#include "hf_export.h"

namespace ridge::checkpoint {
namespace convert_test {

using json = nlohmann::json;
using namespace testing;

std::vector<float> logits_of(const model::Model& m) {
  engine::SessionOptions o;
  o.n_ctx = 16;
  o.max_outputs = 6;
  auto s = engine::Session::create(m, o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  const std::vector<int32_t> tokens = {1, 7, 30, 2, 99, 5};
  auto r = s->eval(tokens, /*all_logits=*/true);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::vector<float>(r->begin(), r->end()) : std::vector<float>{};
}

struct Case {
  const char* preset;
  const char* type;
  int shards;
};

class ConvertRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(ConvertRoundTrip, SameTensorsConfigAndLogits) {
  const Case c = GetParam();
  gguf::Writer synth;
  ASSERT_TRUE(model::testing::build_synthetic(c.preset, c.type, 11, synth).ok());
  auto image = synth.write_to_memory();
  ASSERT_TRUE(image.ok());
  auto original = gguf::File::parse(*image, "original.gguf");
  ASSERT_TRUE(original.ok());
  auto cfg = model::config_from_gguf(*original);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  // Llama 3's scaling is a tensor in the GGUF; the checkpoint states its parameters.
  if (original->find_tensor("rope_freqs.weight") != nullptr) cfg->rope_scaling = offline::preset_config(c.preset)->rope_scaling;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
      ("ridge-convert-" + std::to_string(::getpid()) + "-" + c.preset + "-" + c.type);
  std::filesystem::remove_all(dir);
  write_checkpoint(*original, *cfg, dir, c.shards);

  std::ifstream in(dir / "config.json");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  auto hf = parse_hf_config(text);
  ASSERT_TRUE(hf.ok()) << hf.status().message();
  auto set = SafetensorsSet::open_dir(dir.string());
  ASSERT_TRUE(set.ok()) << set.status().message();
  gguf::Writer out;
  const Status st = convert_checkpoint(*hf, *set, out);
  ASSERT_TRUE(st.ok()) << st.message();
  auto bytes = out.write_to_memory();
  ASSERT_TRUE(bytes.ok());
  std::filesystem::remove_all(dir);
  auto converted = gguf::File::parse(*bytes, "converted.gguf");
  ASSERT_TRUE(converted.ok()) << converted.status().message();

  ASSERT_EQ(converted->tensors().size(), original->tensors().size());
  for (const gguf::TensorInfo& t : original->tensors()) {
    const gguf::TensorInfo* u = converted->find_tensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->type, t.type) << t.name;
    EXPECT_EQ(u->shape, t.shape) << t.name;
    ASSERT_EQ(u->n_bytes, t.n_bytes) << t.name;
    EXPECT_EQ(std::memcmp(u->data, t.data, t.n_bytes), 0) << t.name << " differs";
  }
  auto cfg2 = model::config_from_gguf(*converted);
  ASSERT_TRUE(cfg2.ok()) << cfg2.status().message();
  EXPECT_EQ(cfg2->arch, cfg->arch);
  EXPECT_EQ(cfg2->n_embd, cfg->n_embd);
  EXPECT_EQ(cfg2->n_layer, cfg->n_layer);
  EXPECT_EQ(cfg2->n_head_kv, cfg->n_head_kv);
  EXPECT_EQ(cfg2->head_dim, cfg->head_dim);
  EXPECT_EQ(cfg2->rope_theta, cfg->rope_theta);
  EXPECT_EQ(cfg2->rms_eps, cfg->rms_eps);
  EXPECT_EQ(cfg2->n_ctx_train, cfg->n_ctx_train);
  EXPECT_EQ(cfg2->n_expert, cfg->n_expert);
  EXPECT_EQ(cfg2->n_expert_used, cfg->n_expert_used);
  EXPECT_EQ(cfg2->n_ff_exp, cfg->n_ff_exp);
  EXPECT_EQ(cfg2->n_ff_shexp, cfg->n_ff_shexp);
  EXPECT_EQ(cfg2->rope_freq_scale, cfg->rope_freq_scale);
  EXPECT_EQ(cfg2->n_swa, cfg->n_swa);
  EXPECT_EQ(cfg2->swa_period, cfg->swa_period);
  EXPECT_EQ(cfg2->rope_theta_swa, cfg->rope_theta_swa);
  EXPECT_EQ(cfg2->final_logit_softcap, cfg->final_logit_softcap);
  EXPECT_EQ(cfg2->attn_softcap, cfg->attn_softcap);

  const kernels::Kernels& k = kernels::kernels_for(kernels::best_isa());
  auto m1 = model::Model::from_file(std::make_shared<const gguf::File>(std::move(*original)), k);
  auto m2 = model::Model::from_file(std::make_shared<const gguf::File>(std::move(*converted)), k);
  ASSERT_TRUE(m1.ok() && m2.ok());
  const std::vector<float> a = logits_of(*m1), b = logits_of(*m2);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(Architectures, ConvertRoundTrip,
                         ::testing::Values(Case{"tiny-llama", "f32", 1}, Case{"tiny-llama", "bf16", 2},
                                           Case{"tiny-llama3", "f32", 1},
                                           Case{"tiny-qwen2", "f16", 1}, Case{"tiny-qwen3", "bf16", 3},
                                           Case{"tiny-qwen3", "f32", 1}, Case{"tiny-qwen3moe", "bf16", 2},
                                           Case{"tiny-qwen2moe", "f32", 1}, Case{"tiny-gemma2", "f32", 1},
                                           Case{"tiny-gemma3", "bf16", 2}),
                         [](const auto& p) {
                           std::string s = std::string(p.param.preset) + "_" + p.param.type + "_" +
                                           std::to_string(p.param.shards);
                           for (char& ch : s) ch = ch == '-' ? '_' : ch;
                           return s;
                         });

TEST(HfConfig, RefusesWhatConvertCannotHonour) {
  EXPECT_NE(parse_hf_config("[]").status().message().find("not a JSON object"), std::string::npos);
  EXPECT_NE(parse_hf_config(R"({"architectures":["GPTNeoXForCausalLM"]})").status().message().find("GPTNeoX"),
            std::string::npos);
  const std::string base = R"("architectures":["Qwen3ForCausalLM"],"hidden_size":64,"intermediate_size":128,)"
                           R"("num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100)";
  EXPECT_TRUE(parse_hf_config("{" + base + "}").ok());
  EXPECT_NE(parse_hf_config(R"({"architectures":["Qwen3ForCausalLM"],"hidden_size":64})").status().message().find(
                "intermediate_size"), std::string::npos);
  EXPECT_NE(parse_hf_config("{" + base + R"(,"num_key_value_heads":3})").status().message().find("multiple"),
            std::string::npos);
  EXPECT_NE(parse_hf_config("{" + base + R"(,"rope_scaling":{"rope_type":"dynamic","factor":8}})").status().message().find(
                "dynamic"), std::string::npos);
  EXPECT_NE(parse_hf_config("{" + base + R"(,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":4,)"
                            R"("high_freq_factor":1}})").status().message().find("high_freq_factor"),
            std::string::npos);
  EXPECT_TRUE(parse_hf_config("{" + base + R"(,"rope_scaling":{"rope_type":"llama3","factor":8}})").ok());
  // Fields of another type than the format's: an error or the default, never an exception.
  EXPECT_TRUE(parse_hf_config("{" + base + R"(,"rope_scaling":{"rope_type":5}})").ok());
  EXPECT_FALSE(parse_hf_config("{" + base + R"(,"text_config":[1]})").ok() &&
               parse_hf_config("{" + base + R"(,"rope_scaling":{"factor":"x","rope_type":"linear"}})").ok());
  EXPECT_NE(parse_hf_config("{" + base + R"(,"hidden_size":-1})").status().message().find("hidden_size"),
            std::string::npos);
}

TEST(HfConfig, ExpertsAsTheArchitectureComputesThem) {
  const std::string moe = R"("architectures":["Qwen3MoeForCausalLM"],"hidden_size":64,"intermediate_size":128,)"
                          R"("num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,"num_experts":8,)"
                          R"("num_experts_per_tok":2,"moe_intermediate_size":32)";
  auto ok = parse_hf_config("{" + moe + R"(,"norm_topk_prob":true,"mlp_only_layers":[]})");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->n_expert, 8);
  EXPECT_EQ(ok->n_expert_used, 2);
  EXPECT_EQ(ok->n_ff_exp, 32);
  auto msg = [&](const std::string& extra) { return parse_hf_config("{" + moe + extra + "}").status().message(); };
  EXPECT_NE(msg(R"(,"norm_topk_prob":false)").find("norm_topk_prob"), std::string::npos);
  EXPECT_NE(msg(R"(,"decoder_sparse_step":2)").find("dense layers"), std::string::npos);
  EXPECT_NE(msg(R"(,"mlp_only_layers":[1])").find("dense layers"), std::string::npos);
  EXPECT_NE(msg(R"(,"num_experts_per_tok":9)").find("num_experts_per_tok"), std::string::npos);
  EXPECT_NE(parse_hf_config(R"({"architectures":["Qwen2MoeForCausalLM"],"hidden_size":64,"intermediate_size":128,)"
                            R"("num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,"num_experts":4,)"
                            R"("num_experts_per_tok":2,"moe_intermediate_size":32})")
                .status().message().find("shared_expert_intermediate_size"), std::string::npos);
  EXPECT_EQ(*gguf_tensor_name(*ok, "model.layers.1.mlp.gate.weight"), "blk.1.ffn_gate_inp.weight");
  EXPECT_FALSE(gguf_tensor_name(*ok, "model.layers.1.mlp.down_proj.weight").ok()) << "a dense FFN in a mixture";
  EXPECT_FALSE(gguf_tensor_name(*ok, "model.layers.1.mlp.shared_expert.up_proj.weight").ok()) << "no shared expert";
}

// A checkpoint missing one expert's matrix, or holding an expert past num_experts, is refused
// naming the tensor.
TEST(ConvertExperts, MissingOrExtraExpertsAreRefused) {
  gguf::Writer synth;
  ASSERT_TRUE(model::testing::build_synthetic("tiny-qwen3moe", "f32", 3, synth).ok());
  auto image = synth.write_to_memory();
  ASSERT_TRUE(image.ok());
  auto original = gguf::File::parse(*image, "original.gguf");
  ASSERT_TRUE(original.ok());
  auto cfg = model::config_from_gguf(*original);
  ASSERT_TRUE(cfg.ok());
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ridge-experts-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  write_checkpoint(*original, *cfg, dir, 1);
  std::ifstream in(dir / "config.json");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  auto convert_with = [&](int64_t n_expert) {
    auto hf = parse_hf_config(text);
    EXPECT_TRUE(hf.ok());
    hf->n_expert = n_expert;
    auto set = SafetensorsSet::open_dir(dir.string());
    EXPECT_TRUE(set.ok());
    gguf::Writer out;
    return convert_checkpoint(*hf, *set, out).message();
  };
  EXPECT_NE(convert_with(cfg->n_expert + 1).find("model.layers.0.mlp.experts." + std::to_string(cfg->n_expert) +
                                                 ".gate_proj.weight"), std::string::npos);
  EXPECT_NE(convert_with(cfg->n_expert - 1).find("past the"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(HfConfig, GemmaAsLlamaCppComputesIt) {
  const std::string g3 = R"("architectures":["Gemma3ForCausalLM"],"hidden_size":64,"intermediate_size":128,)"
                         R"("num_hidden_layers":6,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,)"
                         R"("vocab_size":100,"sliding_window":16)";
  auto ok = parse_hf_config("{" + g3 + R"(,"query_pre_attn_scalar":32,"layer_types":["sliding_attention",)"
                            R"("sliding_attention","sliding_attention","sliding_attention","sliding_attention","full_attention"]})");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->n_swa, 16);
  EXPECT_EQ(ok->swa_period, 6);
  EXPECT_EQ(ok->rope_theta_swa, 10000.0);
  EXPECT_TRUE(ok->tied_embeddings);
  auto msg = [&](const std::string& extra) { return parse_hf_config("{" + g3 + extra + "}").status().message(); };
  EXPECT_NE(msg(R"(,"query_pre_attn_scalar":144)").find("query_pre_attn_scalar 144"), std::string::npos);
  EXPECT_NE(msg(R"(,"layer_types":["full_attention"])").find("layer_types[0]"), std::string::npos);
  EXPECT_NE(msg(R"(,"attn_logit_softcapping":50)").find("soft-capping"), std::string::npos);
  EXPECT_EQ(*gguf_tensor_name(*ok, "model.layers.1.pre_feedforward_layernorm.weight"), "blk.1.ffn_norm.weight");
  EXPECT_EQ(*gguf_tensor_name(*ok, "model.layers.1.post_attention_layernorm.weight"), "blk.1.post_attention_norm.weight");
  // A multimodal checkpoint: its text config's fields (Gemma 3's defaults for the rest), its
  // language model's tensors under either prefix, its vision tower not the model's.
  auto mm = parse_hf_config(R"({"architectures":["Gemma3ForConditionalGeneration"],"text_config":{"hidden_size":2560,)"
                            R"("intermediate_size":10240,"num_hidden_layers":34,"sliding_window":1024,)"
                            R"("rope_scaling":{"rope_type":"linear","factor":8.0}},"vision_config":{"hidden_size":1152}})");
  ASSERT_TRUE(mm.ok()) << mm.status().message();
  EXPECT_EQ(mm->n_head, 8);
  EXPECT_EQ(mm->head_dim, 256);
  EXPECT_EQ(mm->n_vocab, 262208);
  EXPECT_EQ(mm->rope_scaling_type, "linear");
  EXPECT_EQ(*gguf_tensor_name(*mm, "language_model.model.layers.3.self_attn.q_proj.weight"), "blk.3.attn_q.weight");
  EXPECT_EQ(*gguf_tensor_name(*mm, "model.language_model.embed_tokens.weight"), "token_embd.weight");
  EXPECT_FALSE(gguf_tensor_name(*mm, "vision_tower.vision_model.post_layernorm.weight").ok());
}

TEST(HfConfig, NamesEachTensorOrRefusesIt) {
  auto c = parse_hf_config(R"({"architectures":["LlamaForCausalLM"],"hidden_size":64,"intermediate_size":128,)"
                           R"("num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*gguf_tensor_name(*c, "model.layers.1.mlp.down_proj.weight"), "blk.1.ffn_down.weight");
  EXPECT_FALSE(gguf_tensor_name(*c, "model.layers.2.mlp.down_proj.weight").ok());  // past num_hidden_layers
  EXPECT_FALSE(gguf_tensor_name(*c, "model.layers.0.mlp.experts.0.w1.weight").ok());
  EXPECT_FALSE(gguf_tensor_name(*c, "vision_tower.x").ok());
}

}  // namespace convert_test
}  // namespace ridge::checkpoint
