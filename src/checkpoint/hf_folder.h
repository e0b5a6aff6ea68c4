// A Hugging Face checkpoint folder, read whole: config.json, the safetensors weights, the
// tokenizer (tokenizer.json; tokenizer_config.json, chat_template.jinja where present), as a
// GGUF file written out (ridge convert) or made in memory (a model command's -m DIR).
#pragma once

#include <string>

#include "base/status.h"
#include "checkpoint/hf_convert.h"
#include "checkpoint/hf_tokenizer.h"
#include "checkpoint/safetensors.h"
#include "gguf/reader.h"
#include "gguf/writer.h"

namespace ridge::checkpoint {

class CheckpointFolder {
 public:
  // Errors name the missing or malformed file (config.json and tokenizer.json are required).
  static Result<CheckpointFolder> open(const std::string& dir);

  const HfConfig& config() const { return config_; }
  // The GGUF's metadata and tensors into `w` (this folder must outlive w's write).
  Status add_to(gguf::Writer& w) const;

 private:
  std::string dir_;
  HfConfig config_;
  HfTokenizerFiles tokenizer_;
  SafetensorsSet weights_;
};

// The folder as a GGUF file in memory of its own (huge pages, writable: the weights can be
// converted to the kernels' layout in place, as a GGUF file read with Backing::kHugePages).
Result<gguf::File> load_checkpoint(const std::string& dir);

}  // namespace ridge::checkpoint
