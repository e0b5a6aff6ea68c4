// Tiny synthetic models built in memory (no files) for engine tests.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "offline/presets.h"
#include "offline/synth.h"
#include "tokenizer/tokenizer.h"

namespace ridge::engine::testing {

struct TinyModel {
  std::unique_ptr<std::vector<uint8_t>> bytes;  // the GGUF image the model points into
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

// The preset's model with `type` weights, built once per (preset, type) and kept for the run.
inline const TinyModel& tiny_model(const std::string& preset, const std::string& type) {
  static std::map<std::string, TinyModel> cache;
  const std::string key = preset + "/" + type;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto cfg = offline::preset_config(preset);
  RIDGE_CHECK(cfg.ok());
  offline::SynthOptions so;
  so.type = *ggml_type_from_name(type);
  so.seed = 3;
  so.n_threads = 1;
  gguf::Writer writer;
  RIDGE_CHECK(offline::build_synthetic_model(*cfg, so, writer).ok());
  auto bytes = writer.write_to_memory();
  RIDGE_CHECK(bytes.ok());
  auto image = std::make_unique<std::vector<uint8_t>>(std::move(bytes).value());
  auto file = gguf::File::parse(*image, key);
  RIDGE_CHECK(file.ok());
  auto m = model::Model::from_file(std::make_shared<const gguf::File>(std::move(file).value()),
                                   kernels::kernels_for(kernels::best_isa()));
  RIDGE_CHECK(m.ok());
  TinyModel t;
  t.bytes = std::move(image);
  t.model = std::make_unique<model::Model>(std::move(m).value());
  auto tok = tokenizer::Tokenizer::from_gguf(t.model->file());
  RIDGE_CHECK(tok.ok());
  t.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
  return cache.emplace(key, std::move(t)).first->second;
}

// A test name for a preset ("tiny-gemma3" -> "tiny_gemma3"): gtest names take no '-'.
inline std::string test_name(std::string preset) {
  for (char& c : preset) c = c == '-' ? '_' : c;
  return preset;
}

// INSTANTIATE_TEST_SUITE_P's name generator for suites parameterised by a preset name.
struct PresetName {
  template <typename Info>
  std::string operator()(const Info& info) const {
    return test_name(info.param);
  }
};

}  // namespace ridge::engine::testing
