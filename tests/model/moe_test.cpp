// Mixture-of-experts pieces that the peer comparison (synthetic_peer_test.cpp) does not isolate:
// the router's top-k and weights, and the one-line refusals of inconsistent MoE metadata.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "backend/cpu/moe_ffn.h"
#include "test_util.h"

namespace ridge::model {
namespace {

using backend::cpu::route_token;

ModelConfig router_config(int64_t n_expert, int64_t k, bool norm, float scale = 1.0f) {
  ModelConfig c;
  c.n_expert = n_expert;
  c.n_expert_used = k;
  c.moe_norm_topk = norm;
  c.expert_weights_scale = scale;
  return c;
}

TEST(MoeRouting, TopKInDescendingOrder) {
  const float probs[] = {0.10f, 0.35f, 0.05f, 0.30f, 0.20f};
  int32_t expert[3];
  float weight[3];
  route_token(router_config(5, 3, false), probs, expert, weight);
  EXPECT_EQ(std::vector<int32_t>(expert, expert + 3), (std::vector<int32_t>{1, 3, 4}));
  EXPECT_EQ(std::vector<float>(weight, weight + 3), (std::vector<float>{0.35f, 0.30f, 0.20f}));
}

TEST(MoeRouting, NormalizedWeightsSumToOne) {
  const float probs[] = {0.10f, 0.35f, 0.05f, 0.30f, 0.20f};
  int32_t expert[2];
  float weight[2];
  route_token(router_config(5, 2, true), probs, expert, weight);
  EXPECT_EQ(expert[0], 1);
  EXPECT_EQ(expert[1], 3);
  EXPECT_FLOAT_EQ(weight[0], 0.35f / 0.65f);
  EXPECT_FLOAT_EQ(weight[1], 0.30f / 0.65f);
  route_token(router_config(5, 2, true, 2.5f), probs, expert, weight);
  EXPECT_FLOAT_EQ(weight[0], 2.5f * (0.35f / 0.65f));
}

TEST(MoeRouting, TiesKeepTheLowerExpertFirst) {
  const float probs[] = {0.25f, 0.25f, 0.25f, 0.25f};
  int32_t expert[2];
  float weight[2];
  route_token(router_config(4, 2, false), probs, expert, weight);
  EXPECT_EQ(expert[0], 0);
  EXPECT_EQ(expert[1], 1);
}

// Loads a tiny-qwen3moe file after `edit` changed its metadata; returns the load error ("" if ok).
template <typename Edit>
std::string load_error(const Edit& edit) {
  return testing::load_error("tiny-qwen3moe", edit);
}

TEST(MoeLoad, TinyQwen3MoeLoads) {
  EXPECT_EQ(load_error([](gguf::Writer&) {}), "");
}

TEST(MoeLoad, DenseFfnSizeIsOptional) {
  EXPECT_EQ(load_error([](gguf::Writer& w) { EXPECT_TRUE(w.erase("qwen3moe.feed_forward_length")); }), "");
}

TEST(MoeLoad, RefusesMoreUsedExpertsThanExperts) {
  const std::string e = load_error([](gguf::Writer& w) {
    w.set("qwen3moe.expert_used_count", gguf::make_u32(9));
  });
  EXPECT_NE(e.find("qwen3moe.expert_used_count"), std::string::npos) << e;
}

TEST(MoeLoad, RefusesExpertsOfTheWrongSize) {
  const std::string e = load_error([](gguf::Writer& w) {
    w.set("qwen3moe.expert_feed_forward_length", gguf::make_u32(32));
  });
  EXPECT_NE(e.find("blk.0.ffn_gate_exps.weight"), std::string::npos) << e;
}

TEST(MoeLoad, RefusesAnExpertCountTheTensorsDoNotHave) {
  const std::string e = load_error([](gguf::Writer& w) {
    w.set("qwen3moe.expert_count", gguf::make_u32(16));
  });
  EXPECT_NE(e.find("ffn_gate_inp.weight"), std::string::npos) << e;
}

TEST(MoeLoad, RefusesASlidingWindowOutsideGptOss) {
  const std::string e = load_error([](gguf::Writer& w) {
    w.set("qwen3moe.attention.sliding_window", gguf::make_u32(128));
  });
  EXPECT_NE(e.find("not supported yet: sliding-window attention in a 'qwen3moe' model"), std::string::npos) << e;
}

TEST(MoeLoad, RefusesInvalidYarnParameters) {
  const std::string e = load_error([](gguf::Writer& w) {
    w.set("qwen3moe.rope.scaling.type", gguf::make_string("yarn"));
    w.set("qwen3moe.rope.scaling.factor", gguf::make_f32(4.0f));
    w.set("qwen3moe.rope.scaling.original_context_length", gguf::make_u32(0));
  });
  EXPECT_NE(e.find("invalid yarn parameters"), std::string::npos) << e;
}

TEST(MoeLoad, GptOssNeedsItsSlidingWindow) {
  const std::string e = testing::load_error("tiny-gpt-oss", [](gguf::Writer& w) {
    EXPECT_TRUE(w.erase("gpt-oss.attention.sliding_window"));
  });
  EXPECT_NE(e.find("missing metadata 'gpt-oss.attention.sliding_window'"), std::string::npos) << e;
}

TEST(MoeLoad, RefusesExpertsInADenseArchitecture) {
  const std::string e = testing::load_error("tiny-qwen3", [](gguf::Writer& w) {
    w.set("qwen3.expert_count", gguf::make_u32(8));
  });
  EXPECT_NE(e.find("8 experts in a 'qwen3' model"), std::string::npos) << e;
}

// Gemma's own metadata: a rope base, soft-caps and YaRN that ridge cannot honour are refused.
TEST(GemmaLoad, TinyGemmasLoad) {
  EXPECT_EQ(testing::load_error("tiny-gemma3", [](gguf::Writer&) {}), "");
  EXPECT_EQ(testing::load_error("tiny-gemma2", [](gguf::Writer&) {}), "");
}

TEST(GemmaLoad, RefusesBadSoftcapsRopeBaseAndYarn) {
  std::string e = testing::load_error("tiny-gemma2", [](gguf::Writer& w) {
    w.set("gemma2.attn_logit_softcapping", gguf::make_f32(-1.0f));
  });
  EXPECT_NE(e.find("_logit_softcapping"), std::string::npos) << e;
  e = testing::load_error("tiny-gemma3", [](gguf::Writer& w) {
    w.set("gemma3.rope.freq_base_swa", gguf::make_f32(0.0f));
  });
  EXPECT_NE(e.find("'gemma3.rope.freq_base_swa' = 0 is not a rope base"), std::string::npos) << e;
  e = testing::load_error("tiny-gemma3", [](gguf::Writer& w) {
    w.set("gemma3.rope.scaling.type", gguf::make_string("yarn"));
  });
  EXPECT_NE(e.find("not supported yet: YaRN rope scaling in a 'gemma3' model"), std::string::npos) << e;
  e = testing::load_error("tiny-gemma3", [](gguf::Writer& w) {
    w.set("gemma3.attention.sliding_window_pattern", gguf::make_u32(5000));
  });
  EXPECT_NE(e.find("gemma3.attention.sliding_window_pattern"), std::string::npos) << e;
}

}  // namespace
}  // namespace ridge::model
