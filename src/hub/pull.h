// `ridge pull`: a GGUF model from the Hugging Face hub (or any server with its API, HF_ENDPOINT)
// into the local cache, resumed when interrupted, checked against the sha256 the hub lists.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "hub/pick.h"

namespace ridge::hub {

struct HubConfig {
  std::string endpoint;   // HF_ENDPOINT, default https://huggingface.co (no trailing slash)
  std::string token;      // HF_TOKEN (empty: anonymous)
  std::string cache_dir;  // RIDGE_MODELS, default $XDG_CACHE_HOME/ridge/models or ~/.cache/ridge/models
  bool progress = true;   // a progress line on stderr while downloading (a terminal: redrawn in place)
};
HubConfig hub_config_from_env();

// The local path of `ref`'s model, downloading what the cache lacks. The parts of a split model
// are merged into one file (gguf/split.h) and then deleted. A repository without GGUF files that
// holds a Hugging Face checkpoint (the original model's: config.json, safetensors, tokenizer) is
// downloaded as a folder, whose path every -m takes (checkpoint/hf_folder.h); :QUANT does not
// apply to it (ridge convert --type quantizes it).
// Files are written as <file>.part and renamed only once complete and checked: nothing
// half-written is ever at the final path. When the hub cannot be reached, a model already in the
// cache is used (with a note on stderr).
Result<std::string> pull(const HubConfig& cfg, const RepoRef& ref, const std::string& revision = "main");

// The complete models in the cache: "user/repo/path" and size (a checkpoint folder: "user/repo/"
// and its files' total).
struct CachedFile {
  std::string name;
  int64_t size = 0;
};
std::vector<CachedFile> list_cached(const HubConfig& cfg);

}  // namespace ridge::hub
