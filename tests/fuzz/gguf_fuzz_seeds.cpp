// Writes a seed corpus of small, valid GGUF files for gguf_fuzz into the given directory.
#include <cstdio>
#include <string>
#include <vector>

#include "gguf/writer.h"

using namespace ridge;
using namespace ridge::gguf;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gguf_fuzz_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const GgmlType types[] = {GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kBF16};
  int n = 0;
  for (GgmlType type : types) {
    for (uint64_t alignment : {32ull, 64ull}) {
      Writer w(alignment);
      w.set("general.architecture", make_string("llama"));
      w.set("llama.block_count", make_u32(1));
      w.set("tokenizer.ggml.tokens", make_string_array({"<s>", "a", "b", "\xe2\x96\x81x"}));
      w.set("tokenizer.ggml.scores", make_f32_array({0.f, -1.f, -2.f, -3.f}));
      w.set("tokenizer.ggml.token_type", make_i32_array({3, 1, 1, 1}));
      const auto& tr = traits(type);
      const uint64_t cols = tr.block_elems == 1 ? 8 : tr.block_elems;
      std::vector<uint8_t> data(cols / tr.block_elems * tr.block_bytes * 2, 0x11);
      if (!w.add_tensor_data("blk.0.w", type, {cols, 2}, data).ok()) return 1;
      if (!w.add_tensor_data("norm", GgmlType::kF32, {4}, std::vector<uint8_t>(16, 0)).ok()) return 1;
      const std::string path = dir + "/seed" + std::to_string(n++) + ".gguf";
      if (!w.write(path).ok()) return 1;
    }
  }
  return 0;
}
