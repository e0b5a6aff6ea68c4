// ridge's checkpoint conversion against the GGUF a checkpoint came from: a synthetic GGUF of each
// architecture is written out as a Hugging Face folder by this test (Hugging Face's tensor names,
// config.json fields and query/key row order, typed here from those conventions, not taken from
// the converter), converted back, and must give the same tensors byte for byte, the same
// configuration and the same logits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/hf_convert.h"
#include "checkpoint/hf_qwen35.h"
#include "checkpoint/safetensors.h"
#include "engine/session.h"
#include "gguf/reader.h"
#include "kernels/kernels.h"
#include "model/config.h"
#include "model/model.h"
#include "model/test_util.h"
#include "offline/presets.h"
#include "tensor/fp16.h"
#include "hf_export.h"
#include "round_trip_logits.h"

namespace ridge::checkpoint {
namespace convert_test {

using json = nlohmann::json;
using namespace testing;

const std::vector<int32_t> kTokens = {1, 7, 30, 2, 99, 5};


struct Case {
  const char* preset;
  const char* type;
  int shards;
  ExportOptions opt = {};
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
  snap_ssm_a(*image, *original);  // Qwen3.5's a as -exp(A_log) of a float A_log
  auto cfg = model::config_from_gguf(*original);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  // Llama 3's scaling is a tensor in the GGUF; the checkpoint states its parameters.
  if (original->find_tensor("rope_freqs.weight") != nullptr) cfg->rope_scaling = offline::preset_config(c.preset)->rope_scaling;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
      ("ridge-convert-" + std::to_string(::getpid()) + "-" + c.preset + "-" + c.type);
  std::filesystem::remove_all(dir);
  write_checkpoint(*original, *cfg, dir, c.shards, c.opt);

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
    // qwen35moe's shared-expert gate: the checkpoint's [1, n_embd] Linear, [n_embd, 1] in ggml's
    // order as llama.cpp's converter writes it (ridge's synth writes the vector [n_embd]).
    std::vector<uint64_t> want = t.shape;
    if (cfg->arch == "qwen35moe" && t.name.ends_with("ffn_gate_inp_shexp.weight")) want.push_back(1);
    EXPECT_EQ(u->shape, want) << t.name;
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
  EXPECT_EQ(cfg2->n_nextn_layers, cfg->n_nextn_layers);
  EXPECT_EQ(cfg2->full_attn_interval, cfg->full_attn_interval);
  EXPECT_EQ(cfg2->rope_dims, cfg->rope_dims);
  EXPECT_EQ(cfg2->ssm_conv_kernel, cfg->ssm_conv_kernel);
  EXPECT_EQ(cfg2->ssm_n_k_heads, cfg->ssm_n_k_heads);
  EXPECT_EQ(cfg2->ssm_n_v_heads, cfg->ssm_n_v_heads);
  EXPECT_EQ(cfg2->ssm_head_dim, cfg->ssm_head_dim);
  // Every metadata key of the original's model section, with its value (Qwen3.5's: the
  // sections, the ssm sizes, nextn_predict_layers).
  if (cfg->arch.starts_with("qwen35")) {
    for (const auto& [key, value] : original->metadata()) {
      if (!key.starts_with(cfg->arch + ".")) continue;
      const gguf::Value* got = converted->find(key);
      ASSERT_NE(got, nullptr) << key;
      EXPECT_EQ(got->type(), value.type()) << key;
      EXPECT_EQ(got->to_display(64), value.to_display(64)) << key;
    }
  }

  const kernels::Kernels& k = kernels::kernels_for(kernels::best_isa());
  auto m1 = model::Model::from_file(std::make_shared<const gguf::File>(std::move(*original)), k);
  auto m2 = model::Model::from_file(std::make_shared<const gguf::File>(std::move(*converted)), k);
  ASSERT_TRUE(m1.ok() && m2.ok());
  const std::vector<float> a = logits_of(*m1, kTokens), b = logits_of(*m2, kTokens);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(Architectures, ConvertRoundTrip,
                         ::testing::Values(Case{"tiny-llama", "f32", 1}, Case{"tiny-llama", "bf16", 2},
                                           Case{"tiny-llama3", "f32", 1},
                                           Case{"tiny-qwen2", "f16", 1}, Case{"tiny-qwen3", "bf16", 3},
                                           Case{"tiny-qwen3", "f32", 1}, Case{"tiny-qwen3moe", "bf16", 2},
                                           Case{"tiny-qwen2moe", "f32", 1}, Case{"tiny-gemma2", "f32", 1},
                                           Case{"tiny-gemma3", "bf16", 2}, Case{"tiny-qwen35", "f32", 1},
                                           Case{"tiny-qwen35", "bf16", 2, {.text_only = true}},
                                           Case{"tiny-qwen35", "f16", 1},
                                           Case{"tiny-qwen35moe", "bf16", 2},
                                           Case{"tiny-qwen35moe", "f32", 1, {.text_only = true, .fused_experts = true}},
                                           Case{"tiny-qwen35-mtp", "bf16", 1},
                                           Case{"tiny-qwen35moe-mtp", "f16", 3, {.fused_experts = true}}),
                         [](const auto& p) {
                           std::string s = std::string(p.param.preset) + "_" + p.param.type + "_" +
                                           std::to_string(p.param.shards) + (p.param.opt.text_only ? "_text" : "") +
                                           (p.param.opt.fused_experts ? "_fused" : "");
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

// Qwen3.5's config.json as llama.cpp's converter reads it: the text config merged over the top
// level, the rope in rope_parameters, layer_types checked against full_attention_interval.
TEST(HfConfig, Qwen35AsLlamaCppReadsIt) {
  json text = {{"hidden_size", 64}, {"intermediate_size", 160}, {"num_hidden_layers", 8}, {"num_attention_heads", 4},
               {"num_key_value_heads", 2}, {"head_dim", 32}, {"vocab_size", 512}, {"linear_conv_kernel_dim", 4},
               {"linear_key_head_dim", 16}, {"linear_value_head_dim", 16}, {"linear_num_key_heads", 2},
               {"linear_num_value_heads", 4}, {"full_attention_interval", 4}, {"mtp_num_hidden_layers", 1},
               {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 1e7}, {"partial_rotary_factor", 0.25},
                                    {"mrope_section", {2, 1, 1}}, {"mrope_interleaved", true}}}};
  const json mm = {{"architectures", {"Qwen3_5ForConditionalGeneration"}}, {"tie_word_embeddings", true},
                   {"text_config", text}, {"vision_config", {{"depth", 27}}}};
  auto c = parse_hf_config(mm.dump());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->gguf_arch, "qwen35");
  EXPECT_TRUE(c->tied_embeddings);
  EXPECT_EQ(c->rope_theta, 1e7);
  EXPECT_EQ(c->rope_dims, 8);
  EXPECT_EQ(c->rope_sections, (std::vector<int64_t>{2, 1, 1, 0}));
  EXPECT_EQ(c->n_mtp, 1);
  EXPECT_EQ(c->full_attn_interval, 4);
  EXPECT_EQ(c->ssm_n_v_heads, 4);
  EXPECT_EQ(*gguf_tensor_name(*c, "model.language_model.layers.0.linear_attn.A_log"), "blk.0.ssm_a");
  EXPECT_EQ(*gguf_tensor_name(*c, "model.language_model.layers.0.linear_attn.dt_bias"), "blk.0.ssm_dt.bias");
  EXPECT_EQ(*gguf_tensor_name(*c, "model.language_model.layers.3.self_attn.q_proj.weight"), "blk.3.attn_q.weight");
  EXPECT_EQ(*gguf_tensor_name(*c, "model.language_model.layers.3.post_attention_layernorm.weight"),
            "blk.3.post_attention_norm.weight");
  EXPECT_EQ(*gguf_tensor_name(*c, "mtp.fc.weight"), "blk.8.nextn.eh_proj.weight");
  EXPECT_EQ(*gguf_tensor_name(*c, "mtp.norm.weight"), "blk.8.nextn.shared_head_norm.weight");
  EXPECT_EQ(*gguf_tensor_name(*c, "mtp.layers.0.self_attn.k_norm.weight"), "blk.8.attn_k_norm.weight");
  EXPECT_NE(gguf_tensor_name(*c, "model.language_model.layers.3.linear_attn.A_log").status().message().find(
                "full-attention"), std::string::npos);
  EXPECT_NE(gguf_tensor_name(*c, "model.layers.0.self_attn.q_proj.weight").status().message().find("linear-attention"),
            std::string::npos);
  EXPECT_FALSE(gguf_tensor_name(*c, "model.visual.blocks.0.attn.qkv.weight").ok());
  EXPECT_FALSE(gguf_tensor_name(*c, "mtp.layers.1.input_layernorm.weight").ok()) << "past mtp_num_hidden_layers";
  EXPECT_FALSE(gguf_tensor_name(*c, "model.layers.0.mlp.gate.weight").ok()) << "a router in a dense model";

  // The flat form with llama.cpp's defaults: rope fields at the top, sections [11, 11, 10].
  json flat = text;
  flat["architectures"] = {"Qwen3_5ForCausalLM"};
  flat.erase("rope_parameters");
  flat["rope_theta"] = 5e6;
  flat["head_dim"] = 256;
  auto d = parse_hf_config(flat.dump());
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->rope_theta, 5e6);
  EXPECT_EQ(d->rope_dims, 64);
  EXPECT_EQ(d->rope_sections, (std::vector<int64_t>{11, 11, 10, 0}));
  EXPECT_FALSE(d->tied_embeddings);

  auto msg = [&](const char* key, const json& value) {
    json j = flat;
    if (value.is_null()) {
      j.erase(key);
    } else {
      j[key] = value;
    }
    return parse_hf_config(j.dump()).status().message();
  };
  const json linear = "linear_attention", full = "full_attention";
  EXPECT_NE(msg("layer_types", {linear, linear, linear, "mamba", linear, linear, linear, full}).find("'mamba'"),
            std::string::npos);
  EXPECT_NE(msg("layer_types", {linear, linear, linear, linear, linear, linear, linear, full}).find("layer_types[3]"),
            std::string::npos);
  EXPECT_NE(msg("layer_types", {linear, full}).find("8 layers"), std::string::npos);
  EXPECT_NE(msg("linear_num_value_heads", nullptr).find("linear_num_value_heads"), std::string::npos);
  EXPECT_NE(msg("linear_num_value_heads", 3).find("multiple"), std::string::npos);
  EXPECT_NE(msg("linear_value_head_dim", 32).find("linear_value_head_dim"), std::string::npos);
  EXPECT_NE(msg("full_attention_interval", 9).find("full_attention_interval"), std::string::npos);
  EXPECT_NE(msg("attn_output_gate", false).find("attn_output_gate"), std::string::npos);
  EXPECT_NE(msg("mtp_use_dedicated_embeddings", true).find("mtp_use_dedicated_embeddings"), std::string::npos);
  EXPECT_NE(msg("rope_parameters", {{"rope_type", "yarn"}, {"factor", 4}}).find("'yarn'"), std::string::npos);
  EXPECT_NE(msg("rope_parameters", {{"mrope_section", {1, 2, 3, 4, 5}}}).find("mrope_section"), std::string::npos);
  // The mixture: a shared expert, the top-k renormalized, no dense width needed.
  json moe = flat;
  moe["architectures"] = {"Qwen3_5MoeForCausalLM"};
  moe.erase("intermediate_size");
  moe.update(json{{"num_experts", 8}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 32}, {"norm_topk_prob", true}});
  EXPECT_NE(parse_hf_config(moe.dump()).status().message().find("shared_expert_intermediate_size"), std::string::npos);
  moe["shared_expert_intermediate_size"] = 48;
  auto e = parse_hf_config(moe.dump());
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->gguf_arch, "qwen35moe");
  EXPECT_EQ(e->n_ff, 0);
  EXPECT_EQ(*gguf_tensor_name(*e, "model.layers.1.mlp.shared_expert_gate.weight"), "blk.1.ffn_gate_inp_shexp.weight");
  moe["norm_topk_prob"] = false;
  EXPECT_NE(parse_hf_config(moe.dump()).status().message().find("norm_topk_prob"), std::string::npos);
}

// exp as PyTorch 1.13 (AVX2) computed these (x, torch.exp(x), the correctly rounded exp): the
// first six are among the one in eleven values where torch is 1 ulp off.
TEST(ConvertQwen35, ExpAsTorchComputesIt) {
  const uint32_t cases[][3] = {{0x401a1e6c, 0x4131ce72, 0x4131ce73}, {0x3ec40184, 0x3fbbb3a6, 0x3fbbb3a7},
                               {0xbe2d2958, 0x3f582c08, 0x3f582c09}, {0x3ff77f3c, 0x40dd40bc, 0x40dd40bd},
                               {0xbe968a10, 0x3f3ec95c, 0x3f3ec95d}, {0x3f9262f4, 0x4048d808, 0x4048d809},
                               {0x4022ee38, 0x414c0d80, 0x414c0d80}, {0xbea5f4fc, 0x3f39208b, 0x3f39208b}};
  auto f = [](uint32_t bits) {
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  };
  for (const auto& c : cases) {
    EXPECT_EQ(torch_expf(f(c[0])), f(c[1])) << f(c[0]);
    EXPECT_EQ(static_cast<float>(std::exp(static_cast<double>(f(c[0])))), f(c[2])) << f(c[0]);
  }
  EXPECT_EQ(torch_expf(0.0f), 1.0f);
  EXPECT_EQ(torch_expf(-200.0f), 0.0f);
  EXPECT_TRUE(std::isinf(torch_expf(200.0f)));
}

// Writes `preset` as a Qwen3.5 folder with `opt` and converts it: the converted file, or the error.
struct Converted {
  std::vector<uint8_t> original, bytes;
  std::string error;
};
Converted convert_qwen35(const char* preset, const char* type, const ExportOptions& opt, int64_t v_heads = 0) {
  Converted out;
  gguf::Writer synth;
  EXPECT_TRUE(model::testing::build_synthetic(preset, type, 7, synth).ok());
  out.original = *synth.write_to_memory();
  auto original = gguf::File::parse(out.original, "original.gguf");
  EXPECT_TRUE(original.ok());
  snap_ssm_a(out.original, *original);
  auto cfg = model::config_from_gguf(*original);
  EXPECT_TRUE(cfg.ok());
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ridge-qwen35-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  write_checkpoint(*original, *cfg, dir, 1, opt);
  std::ifstream in(dir / "config.json");
  auto hf = parse_hf_config(std::string((std::istreambuf_iterator<char>(in)), {}));
  EXPECT_TRUE(hf.ok()) << hf.status().message();
  if (v_heads > 0) hf->ssm_n_v_heads = v_heads;
  auto set = SafetensorsSet::open_dir(dir.string());
  EXPECT_TRUE(set.ok()) << set.status().message();
  gguf::Writer w;
  const Status st = convert_checkpoint(*hf, *set, w);
  if (st.ok()) out.bytes = *w.write_to_memory();
  out.error = st.message();
  std::filesystem::remove_all(dir);
  return out;
}

// A checkpoint missing a tensor, or whose linear layers do not have config.json's sizes, is
// refused naming the tensor.
TEST(ConvertQwen35, MissingOrMisshapenTensorsAreRefused) {
  EXPECT_NE(convert_qwen35("tiny-qwen35-mtp", "f32", {.drop = "model.language_model.layers.1.linear_attn.A_log"})
                .error.find("model.layers.1.linear_attn.A_log"), std::string::npos);
  EXPECT_NE(convert_qwen35("tiny-qwen35-mtp", "f32", {.drop = "mtp.fc.weight"}).error.find("mtp.fc.weight"),
            std::string::npos);
  EXPECT_NE(convert_qwen35("tiny-qwen35-mtp", "f32", {.drop = "mtp.layers.0.self_attn.q_norm.weight"})
                .error.find("mtp.layers.0.self_attn.q_norm.weight"), std::string::npos);
  EXPECT_NE(convert_qwen35("tiny-qwen35moe", "f32", {.fused_experts = true, .drop = "model.language_model.layers.2.mlp.experts.down_proj"})
                .error.find("model.layers.2.mlp.experts.down_proj"), std::string::npos);
  EXPECT_NE(convert_qwen35("tiny-qwen35moe", "f32", {.drop = "model.language_model.layers.0.mlp.experts.5.up_proj.weight"})
                .error.find("experts.5.up_proj"), std::string::npos);
  EXPECT_NE(convert_qwen35("tiny-qwen35", "f32", {.text_only = true, .drop = "model.norm.weight"}).error.find("model.norm.weight"),
            std::string::npos);
  EXPECT_NE(convert_qwen35("tiny-qwen35", "f32", {}, /*v_heads=*/2).error.find("config.json gives"), std::string::npos);
}

// A real checkpoint keeps its vectors, norms, conv taps and routers in its own type; llama.cpp's
// converter writes them as F32, its +1 and -exp computed as torch does: BF16 widened to F32
// first, F16 in F16.
TEST(ConvertQwen35, VectorsWidenedToF32AsLlamaCppWritesThem) {
  for (const char* type : {"bf16", "f16"}) {
    const Converted c = convert_qwen35("tiny-qwen35moe", type, {.narrow_vectors = true});
    ASSERT_TRUE(c.error.empty()) << c.error;
    auto original = gguf::File::parse(c.original, "original.gguf");
    auto converted = gguf::File::parse(c.bytes, "converted.gguf");
    ASSERT_TRUE(original.ok() && converted.ok());
    const bool f16 = std::string(type) == "f16";
    auto narrow = [f16](float v) { return f16 ? fp16_to_f32(f32_to_fp16(v)) : bf16_to_f32(f32_to_bf16(v)); };
    auto in_type = [f16](float v) { return f16 ? fp16_to_f32(f32_to_fp16(v)) : v; };  // torch's F16 arithmetic
    int checked = 0;
    for (const gguf::TensorInfo& t : original->tensors()) {
      const gguf::TensorInfo* u = converted->find_tensor(t.name);
      ASSERT_NE(u, nullptr) << t.name;
      if (t.type != GgmlType::kF32) {
        EXPECT_EQ(u->type, t.type) << t.name;
        continue;
      }
      ASSERT_EQ(u->type, GgmlType::kF32) << t.name;
      const bool norm = t.name.ends_with("norm.weight") && !t.name.ends_with("ssm_norm.weight");
      for (uint64_t i = 0; i < t.n_elements; ++i) {
        float v, got;
        std::memcpy(&v, t.data + 4 * i, 4);
        std::memcpy(&got, u->data + 4 * i, 4);
        float want = narrow(v);
        if (norm) want = in_type(narrow(v - 1.0f) + 1.0f);
        if (t.name.ends_with("ssm_a")) want = -in_type(torch_expf(narrow(a_log_of(v))));
        ASSERT_EQ(got, want) << t.name << "[" << i << "] " << type;
      }
      ++checked;
    }
    EXPECT_EQ(checked, 31);  // 3 linear layers of 8 such tensors, a full-attention one of 6, output_norm
  }
}

}  // namespace convert_test
}  // namespace ridge::checkpoint
