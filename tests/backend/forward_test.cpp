// The whole forward through the test-only scalar backend against the CPU backend (both on the
// ref kernel table, the model's weights in row order) on the tiny synthetic model of every
// architecture: a 12-token prompt with every row's logits, then two decode steps, the scalar
// backend strict about its memory. And backends by name: the registry lists both, refuses an
// unknown name with the list.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "engine/session.h"
#include "model/test_util.h"
#include "guarded_memory.h"
#include "scalar_backend.h"

namespace ridge::backend::testing {
namespace {

const kernels::Kernels& ref_kernels() { return kernels::kernels_for(kernels::Isa::kRef); }

// The preset's f32 model (seed 17) bound for the ref table.
const model::Model& tiny_f32_model(const std::string& preset) {
  return model::testing::cached_tiny(preset, 17, ref_kernels());
}

constexpr int64_t kPrompt = 12;

// Rows of logits on `backend` with a KV cache of `kv_type`: the 12 prompt rows (one eval, all
// logits), then one row for each of two decode tokens.
std::vector<std::vector<float>> run_logits(const model::Model& m, std::string_view backend,
                                           int n_threads, const char* kv_type) {
  engine::SessionOptions o;
  const auto type = kv::kv_type_from_name(kv_type);
  EXPECT_TRUE(type.ok());
  if (!type.ok()) return {};
  o.kv_type = *type;
  o.n_ctx = 32;
  o.max_outputs = kPrompt;
  o.n_threads = n_threads;
  o.backend = backend;
  auto s = engine::Session::create(m, o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return {};
  const int64_t vocab = m.config().n_vocab;
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < kPrompt; ++i)
    tokens.push_back(static_cast<int32_t>((i * 41 + 7) % vocab));
  std::vector<std::vector<float>> rows;
  auto r = s->eval(tokens, /*all_logits=*/true);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  for (int64_t t = 0; t < kPrompt; ++t)
    rows.emplace_back(r->begin() + t * vocab, r->begin() + (t + 1) * vocab);
  for (int32_t tok : {5, 300}) {
    const int32_t one[] = {tok};
    auto d = s->eval(one);
    EXPECT_TRUE(d.ok()) << d.status().message();
    if (!d.ok()) return {};
    rows.emplace_back(d->begin(), d->end());
  }
  return rows;
}

size_t argmax_of(const std::vector<float>& v) {
  return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

class ForwardScalarVsCpu : public ::testing::TestWithParam<std::string> {};

// Logits within 1e-4 of their spread (max - min of the CPU backend's row) and the same argmax in
// every row. tiny-gemma4 and tiny-gemma4moe within 2e-3: sums in another order than the CPU's
// move their logits by up to 1.1e-3 of the spread (1.1e-4 in row 0, which attends to itself
// alone), as the unscaled softmax over normed q and k and the per-layer output scales magnify
// last-bit differences (docs/model.md, "Gemma 4"); a wrong op moves them by whole units.
TEST_P(ForwardScalarVsCpu, LogitsAgree) {
  const std::string& preset = GetParam();
  const double bound = preset.starts_with("tiny-gemma4") ? 2e-3 : 1e-4;
  const model::Model& m = tiny_f32_model(preset);
  for (const char* kv_type : {"f16", "f32"}) {
    SCOPED_TRACE(std::string(kv_type) + " KV cache");
    const auto want = run_logits(m, "cpu", 2, kv_type);
    // Strict: every activation and weight an op takes (outside the whole ops) is the scalar
    // backend's own memory (guarded_memory.h).
    GuardedMemory::StrictScope strict;
    const auto got = run_logits(m, kScalarBackendName, 1, kv_type);
    ASSERT_EQ(want.size(), static_cast<size_t>(kPrompt + 2));
    ASSERT_EQ(got.size(), want.size());
    double worst_ratio = 0, worst_diff = 0, spread_at_worst = 0;
    for (size_t r = 0; r < want.size(); ++r) {
      const auto [lo, hi] = std::minmax_element(want[r].begin(), want[r].end());
      const double spread = static_cast<double>(*hi) - *lo;
      ASSERT_GT(spread, 0.1) << "row " << r << ": flat logits";
      double diff = 0;
      for (size_t i = 0; i < want[r].size(); ++i)
        diff = std::max(diff, std::fabs(double{got[r][i]} - want[r][i]));
      EXPECT_LT(diff, bound * spread) << "row " << r;
      EXPECT_EQ(argmax_of(got[r]), argmax_of(want[r])) << "row " << r;
      if (diff / spread > worst_ratio) {
        worst_ratio = diff / spread;
        worst_diff = diff;
        spread_at_worst = spread;
      }
    }
    RecordProperty(std::string("max_abs_diff_") + kv_type, std::to_string(worst_diff));
    RecordProperty(std::string("max_abs_diff_over_spread_") + kv_type, std::to_string(worst_ratio));
    std::printf(
        "[ forward  ] %-16s %s KV: worst row: max |scalar - cpu| %.3g, spread %.3g (%.3g of it)\n",
        preset.c_str(), kv_type, worst_diff, spread_at_worst, worst_ratio);
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, ForwardScalarVsCpu,
                         ::testing::Values("tiny-llama", "tiny-llama3", "tiny-qwen2", "tiny-qwen3",
                                           "tiny-qwen3-yarn", "tiny-qwen2moe", "tiny-qwen3moe",
                                           "tiny-gpt-oss", "tiny-gemma2", "tiny-gemma3",
                                           "tiny-gemma4", "tiny-gemma4moe", "tiny-qwen35",
                                           "tiny-qwen35moe"),
                         [](const auto& p) {
                           std::string s = p.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

TEST(BackendRegistry, ListsTheScalarBackend) {
  const std::vector<std::string> names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "test-scalar"), names.end());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  auto b = create_backend("test-scalar", BackendParams{&ref_kernels(), nullptr});
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ((*b)->name(), "test-scalar");
  EXPECT_EQ((*b)->n_threads(), 1);
}

TEST(BackendRegistry, ScalarBackendRefusesAnotherWeightLayout) {
  if (!kernels::isa_supported(kernels::Isa::kAvx2)) GTEST_SKIP() << "CPU lacks avx2";
  ThreadPool pool(1);
  auto b = create_backend("test-scalar",
                          BackendParams{&kernels::kernels_for(kernels::Isa::kAvx2), &pool});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("ref"), std::string::npos) << b.status().message();
}

TEST(BackendRegistry, UnknownNameListsTheRegisteredOnes) {
  ThreadPool pool(1);
  auto b = create_backend("no-such", BackendParams{&ref_kernels(), &pool});
  ASSERT_FALSE(b.ok());
  const std::string& msg = b.status().message();
  EXPECT_NE(msg.find("no-such"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cpu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("test-scalar"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ridge::backend::testing
