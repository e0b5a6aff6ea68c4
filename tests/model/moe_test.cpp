// Mixture-of-experts pieces that the peer comparison (synthetic_peer_test.cpp) does not isolate:
// the router's top-k and weights, and the one-line refusals of inconsistent MoE metadata.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "model/moe.h"
#include "test_util.h"

namespace ridge::model {
namespace {

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
  gguf::Writer writer;
  EXPECT_TRUE(testing::build_synthetic("tiny-qwen3moe", "f32", 3, writer).ok());
  edit(writer);
  auto bytes = writer.write_to_memory();
  EXPECT_TRUE(bytes.ok());
  auto file = gguf::File::parse(*bytes, "moe.gguf");
  if (!file.ok()) return file.status().message();
  auto m = Model::from_file(std::make_shared<const gguf::File>(std::move(file).value()),
                            testing::test_kernels());
  return m.ok() ? "" : m.status().message();
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
  gguf::Writer writer;
  ASSERT_TRUE(testing::build_synthetic("tiny-gpt-oss", "f32", 3, writer).ok());
  EXPECT_TRUE(writer.erase("gpt-oss.attention.sliding_window"));
  auto bytes = writer.write_to_memory();
  ASSERT_TRUE(bytes.ok());
  auto file = gguf::File::parse(*bytes, "oss.gguf");
  ASSERT_TRUE(file.ok());
  auto m = Model::from_file(std::make_shared<const gguf::File>(std::move(file).value()),
                            testing::test_kernels());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("missing metadata 'gpt-oss.attention.sliding_window'"),
            std::string::npos) << m.status().message();
}

TEST(MoeLoad, RefusesExpertsInADenseArchitecture) {
  gguf::Writer writer;
  ASSERT_TRUE(testing::build_synthetic("tiny-qwen3", "f32", 3, writer).ok());
  writer.set("qwen3.expert_count", gguf::make_u32(8));
  auto bytes = writer.write_to_memory();
  ASSERT_TRUE(bytes.ok());
  auto file = gguf::File::parse(*bytes, "dense.gguf");
  ASSERT_TRUE(file.ok());
  auto m = Model::from_file(std::make_shared<const gguf::File>(std::move(file).value()),
                            testing::test_kernels());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("8 experts in a 'qwen3' model"), std::string::npos)
      << m.status().message();
}

}  // namespace
}  // namespace ridge::model
