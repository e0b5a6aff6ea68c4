// Gemma 4 files whose per-layer metadata ridge cannot honour are refused at load in one line
// naming the key or tensor (model/config_gemma4.cpp, arch/gemma.cpp): each case writes
// tiny-gemma4 (or its MoE form) with one thing broken.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/config.h"
#include "model/model.h"
#include "model/test_util.h"
#include "offline/presets.h"
#include "offline/synth.h"

namespace ridge::offline {
namespace {

// The load error of `preset` written with `edit` applied to its writer ("" if it loads).
std::string load_error(const char* preset, const std::function<void(gguf::Writer&)>& edit) {
  auto cfg = preset_config(preset);
  EXPECT_TRUE(cfg.ok());
  SynthOptions so;
  so.type = GgmlType::kF32;
  so.n_threads = 1;
  gguf::Writer w;
  EXPECT_TRUE(build_synthetic_model(*cfg, so, w).ok());
  edit(w);
  auto bytes = w.write_to_memory();
  EXPECT_TRUE(bytes.ok());
  auto file = gguf::File::parse(*bytes, "g4");
  if (!file.ok()) return file.status().message();
  auto m = model::Model::from_file(std::make_shared<const gguf::File>(std::move(file).value()),
                                   model::testing::test_kernels());
  return m.ok() ? "" : m.status().message();
}

TEST(Gemma4Config, TheUneditedPresetLoads) {
  EXPECT_EQ(load_error("tiny-gemma4", [](gguf::Writer&) {}), "");
  EXPECT_EQ(load_error("tiny-gemma4moe", [](gguf::Writer&) {}), "");
}

TEST(Gemma4Config, MalformedMetadataIsRefusedInOneLine) {
  struct Case {
    std::function<void(gguf::Writer&)> edit;
    std::string want;  // a substring of the error
  };
  const std::vector<Case> cases = {
      {[](gguf::Writer& w) { w.erase("gemma4.attention.sliding_window_pattern"); },
       "missing metadata 'gemma4.attention.sliding_window_pattern'"},
      {[](gguf::Writer& w) { w.set("gemma4.attention.sliding_window_pattern", gguf::make_bool_array({true, false})); },
       "has 2 values for 7 layers"},
      {[](gguf::Writer& w) { w.set("gemma4.feed_forward_length", gguf::make_i32_array({96, 96, 96})); },
       "'gemma4.feed_forward_length' has 3 values for 7 layers"},
      {[](gguf::Writer& w) {
         w.set("gemma4.attention.head_count_kv", gguf::make_i32_array({2, 1, 1, 2, 1, 4, 1}));
       },
       "not supported yet: 'gemma4.attention.head_count_kv' differs between sliding-window layers"},
      {[](gguf::Writer& w) { w.set("gemma4.attention.head_count_kv", gguf::make_i32_array({3, 3, 1, 3, 1, 3, 1})); },
       "does not divide the 4 attention heads"},
      {[](gguf::Writer& w) { w.set("gemma4.attention.shared_kv_layers", gguf::make_u32(3)); },
       "not supported yet: KV sharing where layers 2 and 3 are not a sliding-window then a global layer"},
      {[](gguf::Writer& w) { w.set("gemma4.attention.shared_kv_layers", gguf::make_u32(6)); },
       "leaves fewer than 2 of 7 layers with KV"},
      {[](gguf::Writer& w) { w.set("gemma4.rope.dimension_count_swa", gguf::make_u32(33)); },
       "'gemma4.rope.dimension_count_swa' = 33 must be even and at most the head size 32"},
      {[](gguf::Writer& w) { w.set("gemma4.embedding_length_per_layer_input", gguf::make_u32(1 << 20)); },
       "'gemma4.embedding_length_per_layer_input' = 1048576 is out of range"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    const std::string err = load_error("tiny-gemma4", c.edit);
    EXPECT_NE(err.find(c.want), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

// Expert scales on gate/up (NVFP4 files) are not applied yet: refused rather than ignored.
TEST(Gemma4Config, GateUpExpertScalesAreRefused) {
  const std::string err = load_error("tiny-gemma4moe", [](gguf::Writer& w) {
    std::vector<float> s(8, 1.0f);
    ASSERT_TRUE(w.add_tensor_data("blk.0.ffn_up_exps.scale", GgmlType::kF32, {8},
                                  std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size() * 4))
                    .ok());
  });
  EXPECT_NE(err.find("not supported yet: tensor 'blk.0.ffn_up_exps.scale'"), std::string::npos) << err;
}

}  // namespace
}  // namespace ridge::offline
