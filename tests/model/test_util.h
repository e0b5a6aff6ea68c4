// Helpers shared by the model tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/thread_pool.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "engine/session.h"
#include "offline/presets.h"
#include "offline/synth.h"
#include "test_files.h"

namespace ridge::model::testing {

inline std::string shared_path(const std::string& rel) {
  return std::string(RIDGE_SHARED_DIR) + "/" + rel;
}

inline std::string stories_path() { return ridge::testing::kStories; }

inline const kernels::Kernels& test_kernels() { return kernels::kernels_for(kernels::best_isa()); }

// Index of the largest value (lowest index on ties), as greedy decoding picks it.
inline int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// A random-weight model of `preset` ("tiny-qwen2", ...) with `type` weights ("q8_0", ...) written
// into `writer` (model/synth.h, one thread).
inline Status build_synthetic(const std::string& preset, const std::string& type, uint64_t seed,
                              gguf::Writer& writer) {
  RIDGE_ASSIGN_OR_RETURN(ModelConfig cfg, offline::preset_config(preset));
  offline::SynthOptions so;
  const auto t = ggml_type_from_name(type);
  if (!t) return error("unknown weight type '{}'", type);
  so.type = *t;
  so.seed = seed;
  so.n_threads = 1;
  return offline::build_synthetic_model(cfg, so, writer).status();
}

// Loads `preset` (f32, seed 3) after `edit` changed its metadata; returns the load error ("" if
// it loads).
template <typename Edit>
std::string load_error(const std::string& preset, const Edit& edit) {
  gguf::Writer writer;
  EXPECT_TRUE(build_synthetic(preset, "f32", 3, writer).ok());
  edit(writer);
  auto bytes = writer.write_to_memory();
  EXPECT_TRUE(bytes.ok());
  auto file = gguf::File::parse(*bytes, preset + ".gguf");
  if (!file.ok()) return file.status().message();
  auto m = Model::from_file(std::make_shared<const gguf::File>(std::move(file).value()), test_kernels());
  return m.ok() ? "" : m.status().message();
}

// The preset's f32 model with `seed`, bound for `kernels`: built once per (preset, seed, table)
// and kept for the test binary's life (the model points into the kept image).
inline const Model& cached_tiny(const std::string& preset, uint64_t seed,
                                const kernels::Kernels& kernels = test_kernels()) {
  using Key = std::tuple<std::string, uint64_t, const kernels::Kernels*>;
  static std::map<Key, std::pair<std::vector<uint8_t>, std::unique_ptr<Model>>> cache;
  auto& entry = cache[Key{preset, seed, &kernels}];
  if (entry.second) return *entry.second;
  gguf::Writer writer;
  const Status built = build_synthetic(preset, "f32", seed, writer);
  EXPECT_TRUE(built.ok()) << built.message();
  auto bytes = writer.write_to_memory();
  EXPECT_TRUE(bytes.ok());
  entry.first = std::move(bytes).value();
  auto file = gguf::File::parse(entry.first, preset + ".gguf");
  EXPECT_TRUE(file.ok());
  auto m = Model::from_file(std::make_shared<const gguf::File>(std::move(file).value()), kernels);
  EXPECT_TRUE(m.ok()) << m.status().message();
  entry.second = std::make_unique<Model>(std::move(m).value());
  return *entry.second;
}

}  // namespace ridge::model::testing
