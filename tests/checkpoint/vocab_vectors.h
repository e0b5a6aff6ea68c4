// llama.cpp's tokenizer test vectors in ../shared/vocab (ggml-vocab-X.gguf.inp: texts separated
// by "\n__ggml_vocab_test__\n"; .out: llama.cpp's ids, a line per text), for the tests that
// check a converted tokenizer against them.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tokenizer/tokenizer.h"

namespace ridge::checkpoint::testing {

inline std::string slurp_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Encodes every text of `vocab_gguf`.inp with `tok` (no special tokens added or parsed) and
// expects llama.cpp's ids of .out; returns how many texts were checked.
inline int expect_llama_cpp_ids(const tokenizer::Tokenizer& tok, const std::string& vocab_gguf) {
  const std::string inp = slurp_file(vocab_gguf + ".inp"), out = slurp_file(vocab_gguf + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::istringstream lines(out);
  int checked = 0;
  for (size_t pos = 0, found; (found = inp.find(sep, pos)) != std::string::npos; pos = found + sep.size()) {
    std::string want;
    if (!std::getline(lines, want)) {
      ADD_FAILURE() << vocab_gguf << ".out has fewer lines than texts";
      break;
    }
    std::string got;
    for (int32_t id : tok.encode(inp.substr(pos, found - pos), /*add_special=*/false, /*parse_special=*/false)) {
      got += " " + std::to_string(id);
    }
    EXPECT_EQ(got, want) << "text " << checked << " of " << vocab_gguf;
    ++checked;
  }
  return checked;
}

}  // namespace ridge::checkpoint::testing
