// Named model shapes (the configs of known Hugging Face models and tiny test shapes), for the
// roofline, the benchmarks and synthetic models.
#pragma once

#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/config.h"

namespace ridge::offline {

using model::ModelConfig;
using model::Pooling;
using model::RopeLayout;
using model::RopeScaling;

struct Preset {
  std::string_view name;     // "qwen3-0.6b"
  std::string_view hf_name;  // "Qwen/Qwen3-0.6B" (empty for the tiny test shapes)
  ModelConfig config;
};

const std::vector<Preset>& presets();
// Case-insensitive lookup; error lists the known names.
Result<ModelConfig> preset_config(std::string_view name);

}  // namespace ridge::offline
