// Helpers shared by the tokenizer tests: locating ../shared data and loading tokenizers.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace ridge::tokenizer::testing {

inline std::string shared_path(const std::string& rel) { return std::string(RIDGE_SHARED_DIR) + "/" + rel; }
inline bool shared_exists(const std::string& rel) { return std::filesystem::exists(shared_path(rel)); }

// Bytes from their hex spelling ("48690a" -> "Hi\n"), as the peer's token vectors store them.
inline std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// SPM vocabulary with Llama 2's <unk> <s> </s> and the 256 byte tokens (ids 3..258), no pieces.
inline VocabData spm_byte_vocab() {
  VocabData d;
  d.model = "llama";
  d.tokens = {"<unk>", "<s>", "</s>"};
  d.token_types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    d.tokens.push_back(fmt::format("<0x{:02X}>", b));
    d.token_types.push_back(6);
  }
  d.scores.assign(d.tokens.size(), 0.0f);
  return d;
}

// The built-in byte-level BPE tokenizer of `ridge synth` in a chat style (no shared data).
inline Tokenizer builtin_tokenizer(std::string_view style) {
  gguf::Writer w;
  w.set("general.architecture", gguf::make_string("llama"));
  write_builtin_byte_tokenizer(w, 300, style);
  auto bytes = w.write_to_memory();
  EXPECT_TRUE(bytes.ok());
  auto f = gguf::File::parse(*bytes, "builtin.gguf");
  EXPECT_TRUE(f.ok());
  auto t = Tokenizer::from_gguf(*f);
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

// Loaded tokenizer of a shared GGUF file; fails the test (not skips) if the file is broken.
inline std::optional<Tokenizer> load_shared(const std::string& rel) {
  auto file = gguf::File::open(shared_path(rel));
  if (!file.ok()) {
    ADD_FAILURE() << file.status().message();
    return std::nullopt;
  }
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok.ok()) {
    ADD_FAILURE() << tok.status().message();
    return std::nullopt;
  }
  return std::move(tok).value();
}

inline std::string ids_to_string(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) {
    s.push_back(' ');
    s.append(std::to_string(id));
  }
  return s;
}

}  // namespace ridge::tokenizer::testing
