// Split GGUF files (llama-gguf-split's layout): part k of N carries split.no = k, split.count = N
// and split.tensors.count; part 0 also carries the model's metadata; the tensors are spread over
// the parts in order.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace ridge::gguf {

// Writes the model the parts hold as one GGUF file at out_path (through out_path + ".tmp", renamed
// when complete): part 0's metadata without the split.* keys, then every part's tensors in order,
// streamed from the parts' mappings. Errors name a part that is missing, out of order or of
// another split.
Status merge_split(const std::vector<std::string>& parts, const std::string& out_path);

}  // namespace ridge::gguf
