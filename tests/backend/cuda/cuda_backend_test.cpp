// The CUDA backend as the engine sees it: registered when built, a one-line error where there is
// no GPU, the architectures it refuses, and (on a machine with a GPU) the whole forward of the
// dense tiny presets against the CPU backend. Without a GPU the device tests skip with a message;
// RIDGE_REQUIRE_CUDA=1 (scripts/device_check.sh) turns the skip into a failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "engine/session.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "model/test_util.h"
#include "offline/synth.h"
#if RIDGE_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace ridge::backend::cuda::testing {
namespace {

#if RIDGE_HAVE_CUDA

// Whether a GPU is there; without one the test skips (or fails under RIDGE_REQUIRE_CUDA).
bool have_device_or_skip(std::string* why) {
  auto mem = device_memory("cuda");
  if (mem.ok()) return true;
  *why = mem.status().message();
  return false;
}
#define RIDGE_NEED_CUDA_DEVICE()                                                          \
  do {                                                                                    \
    std::string why;                                                                      \
    if (!have_device_or_skip(&why)) {                                                     \
      if (std::getenv("RIDGE_REQUIRE_CUDA") != nullptr) FAIL() << "no GPU: " << why;     \
      GTEST_SKIP() << "no GPU here (" << why << "); scripts/device_check.sh runs this";   \
    }                                                                                     \
  } while (0)

TEST(CudaBackend, IsRegistered) {
  const std::vector<std::string> names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "cuda"), names.end());
}

TEST(CudaBackend, NoDeviceIsAOneLineError) {
  std::string why;
  if (have_device_or_skip(&why)) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_NE(why.find("no CUDA device"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  auto b = create_backend("cuda", BackendParams{&kernels::kernels_for(kernels::Isa::kRef), nullptr});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("no CUDA device"), std::string::npos) << b.status().message();
}

// Architectures whose whole ops it lacks are refused when the backend is made for them, before
// any device work; the dense ones pass.
TEST(CudaBackend, RefusesArchitecturesItDoesNotRun) {
  for (const char* preset : {"tiny-qwen3moe", "tiny-qwen2moe", "tiny-gpt-oss", "tiny-qwen35", "tiny-gemma4"}) {
    auto cfg = offline::preset_config(preset);
    ASSERT_TRUE(cfg.ok()) << preset;
    const Status s = check_model_supported(*cfg);
    EXPECT_FALSE(s.ok()) << preset;
    EXPECT_NE(s.message().find("--device cpu"), std::string::npos) << s.message();
  }
  for (const char* preset : {"tiny-llama", "tiny-llama3", "tiny-qwen2", "tiny-qwen3", "tiny-gemma2", "tiny-gemma3"}) {
    auto cfg = offline::preset_config(preset);
    ASSERT_TRUE(cfg.ok()) << preset;
    EXPECT_TRUE(check_model_supported(*cfg).ok()) << preset << ": " << check_model_supported(*cfg).message();
  }
}

TEST(CudaBackend, RefusesThePanelLayouts) {
  if (!kernels::isa_supported(kernels::Isa::kAvx512)) GTEST_SKIP() << "CPU lacks avx512";
  auto b = create_backend("cuda", BackendParams{&kernels::kernels_for(kernels::Isa::kAvx512), nullptr});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("ref"), std::string::npos) << b.status().message();
}

// A preset with `type` weights (seed 17), bound for the ref table (GGUF's row order).
struct TypedModel {
  std::vector<uint8_t> bytes;
  std::unique_ptr<model::Model> model;
};
const model::Model& typed_model(const std::string& preset, const std::string& type) {
  static std::map<std::string, TypedModel> cache;
  TypedModel& e = cache[preset + "/" + type];
  if (e.model) return *e.model;
  gguf::Writer writer;
  const Status built = model::testing::build_synthetic(preset, type, 17, writer);
  EXPECT_TRUE(built.ok()) << built.message();
  e.bytes = std::move(writer.write_to_memory()).value();
  auto file = gguf::File::parse(e.bytes, preset + ".gguf");
  EXPECT_TRUE(file.ok());
  auto m = model::Model::from_file(std::make_shared<const gguf::File>(std::move(file).value()),
                                   kernels::kernels_for(kernels::Isa::kRef));
  EXPECT_TRUE(m.ok()) << m.status().message();
  e.model = std::make_unique<model::Model>(std::move(m).value());
  return *e.model;
}

constexpr int64_t kPrompt = 12;

// The 12 prompt rows' logits (one eval), then one row per decode token.
std::vector<std::vector<float>> logits_on(const model::Model& m, const std::string& backend,
                                          const char* kv_type) {
  engine::SessionOptions o;
  o.kv_type = *kv::kv_type_from_name(kv_type);
  o.n_ctx = 64;
  o.max_outputs = kPrompt;
  o.n_threads = 2;
  o.backend = backend;
  auto s = engine::Session::create(m, o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return {};
  const int64_t vocab = m.config().n_vocab;
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < kPrompt; ++i) tokens.push_back(static_cast<int32_t>((i * 41 + 7) % vocab));
  std::vector<std::vector<float>> rows;
  auto r = s->eval(tokens, /*all_logits=*/true);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  for (int64_t t = 0; t < kPrompt; ++t) rows.emplace_back(r->begin() + t * vocab, r->begin() + (t + 1) * vocab);
  for (int32_t tok : {5, 300, 17, 2}) {
    const int32_t one[] = {tok};
    auto d = s->eval(one);
    EXPECT_TRUE(d.ok()) << d.status().message();
    if (!d.ok()) return {};
    rows.emplace_back(d->begin(), d->end());
  }
  return rows;
}

struct ForwardCase {
  std::string preset, weights, kv;
};

class ForwardCudaVsCpu : public ::testing::TestWithParam<ForwardCase> {};

// Every row's logits within a bound of their spread and the same argmax as the CPU backend's
// (ref table). f32 weights: 1e-4 of the spread (sums in another order). Quantized weights: the
// CPU rounds activations to 8 bits for its integer dots and the GPU does not, so 3e-2.
TEST_P(ForwardCudaVsCpu, LogitsAgree) {
  // The model and the CPU's rows first, with or without a GPU: the case itself is checked here.
  const ForwardCase& c = GetParam();
  const model::Model& m = typed_model(c.preset, c.weights);
  const auto want = logits_on(m, "cpu", c.kv.c_str());
  ASSERT_EQ(want.size(), static_cast<size_t>(kPrompt + 4));
  RIDGE_NEED_CUDA_DEVICE();
  const auto got = logits_on(m, "cuda", c.kv.c_str());
  ASSERT_EQ(got.size(), want.size());
  const double bound = c.weights == "f32" ? 1e-4 : 3e-2;
  double worst = 0;
  for (size_t r = 0; r < want.size(); ++r) {
    const auto [lo, hi] = std::minmax_element(want[r].begin(), want[r].end());
    const double spread = static_cast<double>(*hi) - *lo;
    ASSERT_GT(spread, 0.1) << "row " << r << ": flat logits";
    double diff = 0;
    for (size_t i = 0; i < want[r].size(); ++i) diff = std::max(diff, std::fabs(double{got[r][i]} - want[r][i]));
    EXPECT_LT(diff, bound * spread) << "row " << r;
    const auto am = [](const std::vector<float>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); };
    EXPECT_EQ(am(got[r]), am(want[r])) << "row " << r;
    worst = std::max(worst, diff / spread);
  }
  RecordProperty("max_abs_diff_over_spread", std::to_string(worst));
  std::printf("[ cuda     ] %-14s %-6s %-5s KV: worst row |cuda - cpu| %.3g of the spread\n",
              c.preset.c_str(), c.weights.c_str(), c.kv.c_str(), worst);
}

std::vector<ForwardCase> forward_cases() {
  std::vector<ForwardCase> v;
  for (const char* p : {"tiny-llama", "tiny-llama3", "tiny-qwen2", "tiny-qwen3", "tiny-qwen3-yarn", "tiny-gemma2",
                        "tiny-gemma3"}) {
    v.push_back({p, "f32", "f16"});
  }
  for (const char* kv : {"f32", "bf16", "q8_0"}) v.push_back({"tiny-qwen3", "f32", kv});
  for (const char* w : {"f16", "bf16", "q8_0", "q4_0", "q5_0"}) v.push_back({"tiny-qwen3", w, "f16"});
  // The K formats need rows of 256: tiny-qwen3-256.
  for (const char* w : {"q4_k", "q5_k", "q6_k"}) v.push_back({"tiny-qwen3-256", w, "f16"});
  v.push_back({"tiny-qwen3-256", "q4_k", "q8_0"});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Presets, ForwardCudaVsCpu, ::testing::ValuesIn(forward_cases()),
                         [](const auto& param_info) {
                           std::string s = param_info.param.preset + "_" + param_info.param.weights + "_" + param_info.param.kv;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

#else

TEST(CudaBackend, NotBuilt) {
  const std::vector<std::string> names = backend_names();
  EXPECT_EQ(std::find(names.begin(), names.end(), "cuda"), names.end()) << "registered without RIDGE_CUDA";
}

#endif

}  // namespace
}  // namespace ridge::backend::cuda::testing
