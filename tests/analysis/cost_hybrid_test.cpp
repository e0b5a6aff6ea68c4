// The cost model of hybrid models (Qwen3.5: Gated DeltaNet layers beside full attention): the
// file's tensor table, KV for the attention layers only, and a recurrent state per sequence that
// does not grow with the context (llama.cpp's sizes: (K - 1) x conv_dim conv values and
// Hv x dv x dk delta-rule values per layer).
#include <gtest/gtest.h>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/config.h"
#include "model/cost.h"
#include "offline/presets.h"
#include "offline/synth.h"
#include "offline/weight_types.h"
#include "cost_test_util.h"

namespace ridge::model {
namespace {

using testing::cost_of;

TEST(CostHybridTest, KvAndStateOfQwen35_9B) {
  const ModelCost m = cost_of("qwen3.5-9b", "q4_k_m");
  // 8 of 32 layers keep K and V: 2 x 8 x (4 heads x 256) x 2 bytes.
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token, 2.0 * 8 * 1024 * 2);
  // 24 linear layers of 3 x (2 x 16 x 128 + 32 x 128) conv values and 32 x 128 x 128 state values.
  EXPECT_DOUBLE_EQ(m.state_bytes_per_seq, 24.0 * (3 * 8192 + 32 * 128 * 128) * 4);
  // A decode step at context 16k reads the attention layers' 16k positions, and the state once
  // (read and written) whatever the context.
  const StepCost at_4k = cost_of_step(m, 1, 4096), at_16k = cost_of_step(m, 1, 16384);
  EXPECT_DOUBLE_EQ(at_16k.kv_read_bytes, 16384 * m.kv_bytes_per_token);
  EXPECT_DOUBLE_EQ(at_16k.state_bytes, 2 * m.state_bytes_per_seq);
  EXPECT_DOUBLE_EQ(at_4k.state_bytes, at_16k.state_bytes);
  // Attention FLOPs: 8 layers of 16 heads x 256, 4 FLOPs per element and position.
  EXPECT_DOUBLE_EQ(m.attention_flops_per_position(), 4.0 * 8 * 16 * 256);
}

// A dense model of the same width reads 4x the KV per token: the hybrid's step grows 4x slower
// with the context.
TEST(CostHybridTest, KvGrowsAQuarterAsFastAsADenseModels) {
  const ModelCost hybrid = cost_of("qwen3.5-9b", "q8_0");
  auto dense_cfg = *offline::preset_config("qwen3.5-9b");
  dense_cfg.full_attn_interval = 0;  // every layer full attention, same shapes
  auto dense = model_cost(dense_cfg, uniform_types(GgmlType::kQ8_0), kv::KvType::kF16);
  ASSERT_TRUE(dense.ok());
  EXPECT_DOUBLE_EQ(dense->kv_bytes_per_token, 4 * hybrid.kv_bytes_per_token);
  EXPECT_DOUBLE_EQ(dense->state_bytes_per_seq, 0.0);
}

// The tensor table of a synthesized Qwen3.5 file (q4_k_m: attn_qkv under attn_v's rules, the
// small state vectors f32): the cost model counts exactly the bytes the reader finds.
TEST(CostHybridTest, GgufTensorTableGivesTheFileBytes) {
  for (const char* preset : {"tiny-qwen35", "tiny-qwen35moe"}) {
    for (const char* type : {"q8_0", "q4_k_m"}) {
      SCOPED_TRACE(std::string(preset) + " " + type);
      auto cfg = offline::preset_config(preset);
      ASSERT_TRUE(cfg.ok());
      offline::SynthOptions so;
      if (auto mix = offline::quant_mix_from_name(type); mix.ok()) {
        so.mix = *mix;
      } else {
        so.type = *ggml_type_from_name(type);
      }
      so.n_threads = 1;
      gguf::Writer w;
      auto built = offline::build_synthetic_model(*cfg, so, w);
      ASSERT_TRUE(built.ok()) << built.status().message();
      auto bytes = w.write_to_memory();
      ASSERT_TRUE(bytes.ok());
      auto file = gguf::File::parse(*bytes, "tiny.gguf");
      ASSERT_TRUE(file.ok());
      double file_bytes = 0;
      for (const auto& t : file->tensors()) file_bytes += static_cast<double>(t.n_bytes);
      auto fn = weight_types_from_gguf(*file);
      ASSERT_TRUE(fn.ok());
      auto m = model_cost(*built, *fn, kv::KvType::kF16);
      ASSERT_TRUE(m.ok()) << m.status().message();
      EXPECT_DOUBLE_EQ(m->weight_file_bytes, file_bytes);
      // And the mixture rule the roofline applies without a file gives the same bytes.
      auto by_name = offline::weight_types_by_name(type, *built);
      ASSERT_TRUE(by_name.ok());
      EXPECT_DOUBLE_EQ(model_cost(*built, *by_name, kv::KvType::kF16)->weight_file_bytes, file_bytes);
    }
  }
}

}  // namespace
}  // namespace ridge::model
