// `ridge inspect DIR` on a Hugging Face checkpoint folder.
#pragma once

#include <string>

namespace ridge::cli {

// Prints the folder's config.json essentials and its safetensors tensors (count and bytes by
// dtype, then each tensor), as text or JSON; returns the exit code (one-line error: 1).
int inspect_checkpoint(const std::string& dir, bool as_json);

}  // namespace ridge::cli
