// A model read into huge pages has its matrices converted into the kernels' layout
// (Kernels::layout_for: kPanels16 for the 32-element formats, the K formats and IQ4_XS on
// AVX-512); one mapped keeps GGUF's rows. Both must give bit-identical logits over a prompt and
// greedy decode steps, on every ISA.
#include <gtest/gtest.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "base/thread_pool.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "engine/session.h"
#include "offline/synth.h"
#include "test_util.h"

namespace ridge::model {
namespace {

// The logits of a 21-token prompt (every position) and 6 greedy decode steps.
std::vector<float> trace(const Model& m, int n_threads) {
  engine::SessionOptions opts;
  opts.n_ctx = 64;
  opts.max_outputs = 32;
  opts.n_threads = n_threads;
  auto s = engine::Session::create(m, opts);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return {};
  std::vector<int32_t> prompt;
  for (int i = 0; i < 21; ++i) prompt.push_back((i * 37 + 11) % 512);
  auto logits = s->eval(prompt, /*all_logits=*/true);
  EXPECT_TRUE(logits.ok()) << logits.status().message();
  if (!logits.ok()) return {};
  std::vector<float> out(logits->begin(), logits->end());
  const auto n_vocab = static_cast<size_t>(m.config().n_vocab);
  for (int step = 0; step < 6; ++step) {
    const int32_t next = testing::argmax(std::span<const float>(out).last(n_vocab));
    auto l = s->eval(std::span<const int32_t>(&next, 1));
    EXPECT_TRUE(l.ok());
    if (!l.ok()) return {};
    out.insert(out.end(), l->begin(), l->end());
  }
  return out;
}

TEST(WeightLayoutModel, HugePageCopyEqualsMapping) {
  // f16: rows in both; the 256-element formats need rows of 256 (tiny-qwen3-256).
  const std::pair<const char*, const char*> cases[] = {
      {"tiny-qwen3", "q8_0"}, {"tiny-qwen3", "q4_0"}, {"tiny-qwen3", "q5_1"}, {"tiny-qwen3", "f16"},
      {"tiny-qwen3-256", "iq4_xs"}};
  for (const auto& [preset, type] : cases) {
    SCOPED_TRACE(type);
    gguf::Writer writer;
    ASSERT_TRUE(testing::build_synthetic(preset, type, 21, writer).ok());
    const std::string path = ::testing::TempDir() + "/layout_" + type + ".gguf";
    ASSERT_TRUE(writer.write(path).ok());
    for (kernels::Isa isa : {kernels::Isa::kAvx2, kernels::Isa::kAvx512}) {
      if (!kernels::isa_supported(isa)) continue;
      SCOPED_TRACE(std::string(kernels::isa_name(isa)));
      const kernels::Kernels& k = kernels::kernels_for(isa);
      auto mapped = Model::load(path, k, gguf::Backing::kMapped);
      auto copied = Model::load(path, k, gguf::Backing::kHugePages);
      ASSERT_TRUE(mapped.ok()) << mapped.status().message();
      ASSERT_TRUE(copied.ok()) << copied.status().message();
      const kernels::WeightLayout want = k.layout_for(copied->weights().layers[0].wq.type);
      EXPECT_EQ(copied->weights().layers[0].wq.layout, want);
      EXPECT_EQ(copied->weights().output.layout, want);  // tied to token_embd: converted once
      EXPECT_EQ(mapped->weights().layers[0].wq.layout, kernels::WeightLayout::kRows);
      const std::vector<float> a = trace(*mapped, 1);
      ASSERT_FALSE(a.empty());
      EXPECT_TRUE(a == trace(*copied, 1));
      EXPECT_TRUE(a == trace(*copied, 3));
    }
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace ridge::model
