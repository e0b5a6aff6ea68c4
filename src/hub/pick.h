// Which files of a Hugging Face repository `ridge pull user/repo[:QUANT]` takes: the GGUF whose
// name carries the quantization tag (llama.cpp's -hf convention), or all parts of a split one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ridge::hub {

inline constexpr std::string_view kDefaultQuant = "Q4_K_M";  // llama.cpp's default for -hf

// "user/repo[:QUANT]" (QUANT empty when not given). Usage error for anything else.
struct RepoRef {
  std::string repo;
  std::string quant;
};
Result<RepoRef> parse_repo_ref(std::string_view text);

struct RepoFile {
  std::string path;    // inside the repository
  int64_t size = -1;   // bytes; -1 unknown
  std::string sha256;  // the LFS object id (hex); empty when the hub gives none
};

// Whether `path` names a GGUF file carrying the tag `quant` (case-insensitive, between separators:
// "model-Q4_K_M.gguf", "Q4_K_M/model-00001-of-00002.gguf"; "Q4_K" does not match "Q4_K_M").
bool has_quant_tag(std::string_view path, std::string_view quant);

// The model's files among `files`: one GGUF, or the parts 1..N of a split one in order. `quant`
// empty: Q4_K_M if present, else the repository's only model. Projector files (mmproj) are never
// taken. The error lists the quantizations the repository has.
Result<std::vector<RepoFile>> pick_gguf(const std::vector<RepoFile>& files, std::string_view quant);

// A Hugging Face checkpoint repository's files (a repository without GGUF files, as the original
// model's: config.json, the safetensors weights with their index, the tokenizer's files and the
// chat template), top-level files only; an error naming what a checkpoint needs and lacks.
Result<std::vector<RepoFile>> pick_checkpoint(const std::vector<RepoFile>& files);
// Whether any of `files` is a model GGUF (not a projector).
bool has_model_gguf(const std::vector<RepoFile>& files);

// The name a split model's parts are merged into: "Q8_0/m-Q8_0-00001-of-00002.gguf" ->
// "Q8_0/m-Q8_0.gguf" (a single file's own name).
std::string merged_name(const std::string& part_path);

}  // namespace ridge::hub
