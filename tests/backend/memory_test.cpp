// Memory behind the backend (base/device_memory.h): the host's memory; the guarded memory of the
// test backend, which host code cannot touch outside the backend's ops; and whole runs through
// that backend (a runner, the engine with prefix caching of a hybrid model's state, MTP drafts),
// which would fault if the model, runner or engine read or wrote the backend's memory directly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "base/device_memory.h"
#include "engine/engine.h"
#include "engine/runner.h"
#include "guarded_memory.h"
#include "kernels/kernels.h"
#include "model/test_util.h"
#include "scalar_backend.h"

namespace ridge::backend::testing {
namespace memory_test {

const kernels::Kernels& ref_kernels() { return kernels::kernels_for(kernels::Isa::kRef); }

TEST(HostMemory, AllocatesZeroedAlignedAndRefusesZeroBytes) {
  DeviceMemory& mem = host_memory();
  EXPECT_TRUE(mem.host_visible());
  EXPECT_GT(mem.available_bytes(), 0u);
  for (MemoryUse use : {MemoryUse::kScratch, MemoryUse::kStream}) {
    auto a = DeviceArray<float>::create(mem, 1000, use);
    ASSERT_TRUE(a.ok()) << a.status().message();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data()) % 64, 0u);
    for (float v : *a) EXPECT_EQ(v, 0.0f);
    (*a)[999] = 1.5f;
    float back = 0;
    mem.to_host(&back, a->data() + 999, sizeof back);
    EXPECT_EQ(back, 1.5f);
  }
  EXPECT_FALSE(mem.allocate(0, MemoryUse::kScratch).ok());
  EXPECT_TRUE(DeviceArray<float>::create(mem, 0)->empty());
}

TEST(GuardedMemory, IsReadableOnlyWhileOpenAndThroughItsCopies) {
  GuardedMemory& mem = GuardedMemory::instance();
  EXPECT_FALSE(mem.host_visible());
  auto a = DeviceArray<int32_t>::create(mem, 16);
  ASSERT_TRUE(a.ok());
  const int32_t in[3] = {7, 8, 9};
  mem.to_device(a->data() + 4, in, sizeof in);
  int32_t out[3] = {};
  mem.to_host(out, a->data() + 4, sizeof out);
  EXPECT_EQ(std::memcmp(in, out, sizeof in), 0);
  mem.copy(a->data(), a->data() + 4, sizeof in);
  mem.zero(a->data() + 4, sizeof in);
  {
    GuardedMemory::Open open(mem);
    EXPECT_EQ((*a)[0], 7);
    EXPECT_EQ((*a)[2], 9);
    EXPECT_EQ((*a)[4], 0);
  }
  EXPECT_FALSE(mem.is_open());
  int32_t* p = a->data();
  EXPECT_DEATH({ volatile int32_t v = p[0]; (void)v; }, "");
}

TEST(BackendRegistry, NamesEachBackendsDeviceMemory) {
  auto cpu = device_memory("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(*cpu, &host_memory());
  auto scalar = device_memory(kScalarBackendName);
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(*scalar, &GuardedMemory::instance());
  auto none = device_memory("no-such");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("registered"), std::string::npos);
}

using Strict = GuardedMemory::StrictScope;

TEST(GuardedMemory, StrictOpsRefuseHostPointers) {
  auto b = create_backend(kScalarBackendName, BackendParams{&ref_kernels(), nullptr});
  ASSERT_TRUE(b.ok());
  std::vector<float> host(8, 1.0f);
  auto dev = DeviceArray<float>::create(GuardedMemory::instance(), 8);
  ASSERT_TRUE(dev.ok());
  Strict strict;
  (*b)->scale(dev->data(), 1, 8, 2.0f);
  EXPECT_DEATH((*b)->scale(host.data(), 1, 8, 2.0f), "host pointer");
  // A weight the backend was not given at load.
  EXPECT_DEATH((*b)->rms_norm(dev->data(), host.data(), dev->data(), 1, 8, 1e-6f), "load_weights");
}

// The regions a device backend copies are every tensor of the file once (f32 files: no
// converted vectors; a tied output is the embedding's region), besides the derived tables.
TEST(WeightRegions, CoverEveryTensorOnce) {
  for (const char* preset : {"tiny-llama", "tiny-qwen2", "tiny-qwen3moe", "tiny-gpt-oss", "tiny-gemma3",
                             "tiny-gemma4moe", "tiny-qwen35", "tiny-qwen35-mtp"}) {
    SCOPED_TRACE(preset);
    const model::Model& m = model::testing::cached_tiny(preset, 17, ref_kernels());
    uint64_t file_bytes = 0, region_bytes = 0;
    for (const gguf::TensorInfo& t : m.file().tensors()) file_bytes += t.n_bytes;
    std::vector<const void*> starts;
    size_t n_tensors = 0;
    for (const model::WeightRegion& r : m.weights().regions) {
      starts.push_back(r.data);
      if (r.derived) continue;
      region_bytes += r.bytes;
      ++n_tensors;
    }
    std::sort(starts.begin(), starts.end());
    EXPECT_EQ(std::adjacent_find(starts.begin(), starts.end()), starts.end());
    EXPECT_EQ(region_bytes, file_bytes);
    EXPECT_EQ(n_tensors, m.file().tensors().size());
  }
}

engine::ModelRunnerOptions runner_options(const char* backend) {
  engine::ModelRunnerOptions o;
  o.n_blocks = 8;
  o.max_tokens = 16;
  o.max_outputs = 4;
  o.max_context = 128;
  o.backend = backend;
  return o;
}

// The runner's cache and workspace are the guarded memory's: reading the cache from the host
// outside an op faults.
TEST(GuardedMemory, HoldsARunnersCacheAndWorkspace) {
  const model::Model& m = model::testing::cached_tiny("tiny-qwen3", 17, ref_kernels());
  const size_t before = GuardedMemory::instance().n_allocations();
  auto r = engine::ModelRunner::create(m, runner_options(kScalarBackendName.data()));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(GuardedMemory::instance().n_allocations(), before + 5);
  const auto* k = static_cast<const uint8_t*>((*r)->kv().k_block(0, 0, 0));
  EXPECT_DEATH({ volatile uint8_t v = k[0]; (void)v; }, "");
}

// Greedy tokens of an engine: each prompt in turn, n_new tokens each.
std::vector<std::vector<int32_t>> generate(const model::Model& m, engine::EngineOptions o,
                                           const std::vector<std::vector<int32_t>>& prompts,
                                           int n_new, int32_t* n_cached = nullptr) {
  auto e = engine::Engine::create(m, nullptr, o);
  EXPECT_TRUE(e.ok()) << e.status().message();
  if (!e.ok()) return {};
  std::vector<std::vector<int32_t>> outs;
  for (const auto& prompt : prompts) {
    std::vector<int32_t> out;
    engine::Request req;
    req.prompt_tokens = prompt;
    req.params.temperature = 0;
    req.params.max_tokens = n_new;
    req.ignore_eos = true;
    req.on_output = [&](const engine::RequestOutput& ev) {
      EXPECT_NE(ev.finish, engine::FinishReason::kError) << ev.error;
      out.insert(out.end(), ev.tokens.begin(), ev.tokens.end());
      if (n_cached != nullptr) *n_cached += ev.stats.n_cached_prompt_tokens;
    };
    EXPECT_TRUE((*e)->add_request(std::move(req)).ok());
    for (int i = 0; i < 1000 && (*e)->step(); ++i) {
    }
    outs.push_back(out);
  }
  return outs;
}

engine::EngineOptions engine_options(const model::Model& m, const char* backend) {
  engine::EngineOptions o;
  o.max_model_len = 96;
  o.max_batched_tokens = 16;  // prompts in chunks
  o.max_seqs = 2;
  o.block_size = 16;
  o.backend = backend;
  o.kv_bytes = 24 * kv::kv_block_bytes(m.kv_config(1, kv::KvType::kF16, 16, 1, 0, m.has_mtp()));
  return o;
}

std::vector<int32_t> tokens_of(int n, int salt) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back((salt + 37 * i) % 500);
  return t;
}

// The engine through the guarded backend: a hybrid model's prompts in chunks, the second taking
// its prefix (and the recurrent state kept there) from the cache; the same greedy tokens as
// through the CPU backend.
TEST(GuardedMemory, EngineWithPrefixCachingOfAHybridModel) {
  const model::Model& m = model::testing::cached_tiny("tiny-qwen35", 17, ref_kernels());
  const std::vector<int32_t> a = tokens_of(40, 3);
  std::vector<int32_t> b(a.begin(), a.begin() + 32);
  b.push_back(11);
  b.push_back(12);
  int32_t cached = 0;
  Strict strict;
  const auto want = generate(m, engine_options(m, "cpu"), {a, b}, 6);
  const auto got = generate(m, engine_options(m, kScalarBackendName.data()), {a, b}, 6, &cached);
  EXPECT_EQ(got, want);
  EXPECT_GT(cached, 0) << "the second prompt took nothing from the prefix cache";
}

// MTP drafts through the guarded backend: the head's hidden rows go back to the host and its
// input h up to the device; the tokens are plain greedy decoding's (through the CPU backend).
TEST(GuardedMemory, EngineWithMtpDrafts) {
  const model::Model& m = model::testing::cached_tiny("tiny-qwen35-mtp", 17, ref_kernels());
  ASSERT_TRUE(m.has_mtp());
  const std::vector<int32_t> a = tokens_of(20, 5);
  Strict strict;
  const auto want = generate(m, engine_options(m, "cpu"), {a}, 8);
  engine::EngineOptions o = engine_options(m, kScalarBackendName.data());
  o.spec = engine::SpecMethod::kMtp;
  o.spec_cost_rule = false;
  const auto got = generate(m, o, {a}, 8);
  EXPECT_EQ(got, want);
}

}  // namespace memory_test
}  // namespace ridge::backend::testing
