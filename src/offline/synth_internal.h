// What synth.cpp shares with the per-architecture writers (synth_gemma4.cpp): how a random
// tensor is drawn and added. Internal to offline/.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "gguf/writer.h"
#include "offline/synth.h"

namespace ridge::offline {

// How a tensor's values are drawn: center + uniform noise of standard deviation `stddev`.
struct Init {
  float center;
  float stddev;
};

// Adds one tensor [cols, rows] (ggml order; [cols, rows, planes] with planes > 1, e.g. stacked
// experts) whose rows are generated in parallel at write time.
Status add_random(gguf::Writer& w, const std::string& name, GgmlType type, int64_t cols, int64_t rows,
                  Init init, const SynthOptions& opt, int64_t planes = 1);
// A matrix's values for `fan_in` inputs: centered, standard deviation 1 / sqrt(fan_in).
Init linear_init(int64_t fan_in);
// Adds a weight matrix (name, cols, rows, init, planes) in the type the options give it.
using AddMatrix = std::function<Status(const std::string&, int64_t, int64_t, Init, int64_t)>;

// Gemma 4 (synth_gemma4.cpp): layer il's tensors, the model-wide ones, the metadata.
Status add_gemma4_layer(gguf::Writer& w, const ModelConfig& c, int64_t il, const std::string& p,
                        const SynthOptions& opt, const AddMatrix& add_matrix);
Status add_gemma4_globals(gguf::Writer& w, const ModelConfig& c, const SynthOptions& opt,
                          const AddMatrix& add_matrix);
void write_gemma4_metadata(const ModelConfig& c, gguf::Writer& w);

}  // namespace ridge::offline
