// A small synthetic Gemma 4 vocabulary (tokenizer.ggml.model = "gemma4"), deterministic, written
// with ridge's GGUF writer: the shape of Gemma's real vocabulary (<pad> <eos> <bos> <unk> <mask>,
// turn and tool markers, the 256 <0xNN> byte tokens, "▁" for spaces, newline-run tokens) in a few
// hundred tokens. There is no Gemma 4 file on the development machine; gemma4_test.cpp compares
// ridge with llama.cpp's ids for it (data/peer_gemma4.json, written by data/regen_peer_gemma4.sh
// from the files Gemma4Peer.DumpForPeer writes).
//
// Deliberate edge cases: a few ASCII characters and most non-ASCII ones are no token (byte
// fallback); "ç" is no token but the merge "ç a" exists (merging a symbol outside the
// vocabulary); the merge "q u" makes "qu", which is no token (its bytes fall back); "▁unreachable"
// is a token no merge builds; "\n\n\n\n" is a token, "\n\n\n" only a merge result away; "</s>" is
// control type but becomes ordinary text next to <|tool_response> (llama.cpp's Gemma 4 rule);
// "<table>" is user-defined (recognised without parse_special).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gguf/writer.h"

namespace ridge::tokenizer::testing {

enum class Gemma4Variant {
  kStandard,      // add_bos_token = true, tokenizer.ggml.pre = "gemma4", all 256 byte tokens
  kNoBosMissing,  // add_bos_token = false, pre "llama-bpe" (ignored), no <0x0D> <0x7E> <0xF0>
};

inline const char* gemma4_file_name(Gemma4Variant v) {
  return v == Gemma4Variant::kStandard ? "gemma4_synthetic.gguf" : "gemma4_synthetic_nobos.gguf";
}

// Merges in rank order, as "left right" pairs of raw UTF-8 ("▁" is an escaped space).
inline std::vector<std::pair<std::string, std::string>> gemma4_merge_pairs() {
  return {
      {"▁", "▁"},   {"▁▁", "▁▁"},  {"\n", "\n"},       {"t", "h"},     {"h", "e"},
      {"th", "e"},  {"▁", "t"},    {"▁t", "he"},       {"▁", "the"},   {"i", "n"},
      {"in", "g"},  {"▁", "a"},    {"i", "s"},         {"▁", "is"},    {"o", "f"},
      {"▁", "of"},  {"a", "n"},    {"an", "d"},        {"▁", "and"},   {"H", "e"},
      {"l", "l"},   {"He", "ll"},  {"Hell", "o"},      {"▁", "Hello"}, {"w", "o"},
      {"r", "l"},   {"wo", "rl"},  {"worl", "d"},      {"▁", "world"}, {"t", "o"},
      {"k", "e"},   {"to", "ke"},  {"toke", "n"},      {"▁", "token"}, {"i", "z"},
      {"e", "r"},   {"iz", "er"},  {"▁token", "izer"}, {"c", "a"},     {"f", "é"},
      {"ca", "fé"}, {"▁", "café"}, {"ü", "b"},         {"üb", "er"},   {"▁", "über"},
      {"中", "文"}, {"▁", "中文"}, {"日", "本"},       {"😀", "😀"},     {"ç", "a"},
      {"q", "u"},   {"<", "|"},    {"|", ">"},         {".", "."},     {"..", "."},
      {"1", "2"},   {"12", "3"},   {"u", "r"},         {"t", "ur"},    {"▁", "ing"},
      {"▁▁", "▁"},
  };
}

// The tokenizer.* keys of the synthetic vocabulary (and general.architecture = "llama", which
// llama.cpp needs to load a vocabulary-only file; the tokenizer does not depend on it).
inline gguf::Writer gemma4_vocab_writer(Gemma4Variant variant) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::set<std::string> have;
  auto add = [&](const std::string& t, int32_t type) {
    if (have.insert(t).second) {
      tokens.push_back(t);
      types.push_back(type);
    }
  };
  for (const char* t : {"<pad>", "<eos>", "<bos>"}) add(t, 3);
  add("<unk>", 2);
  add("<mask>", 3);
  for (const char* t : {"<|turn>", "<turn|>", "<|tool_call>", "<tool_call|>", "<|tool_response>",
                        "<tool_response|>", "<|channel>", "<channel|>", "<|think|>", "</s>"}) {
    add(t, 3);
  }
  add("<table>", 4);
  add("<br>", 4);
  const bool standard = variant == Gemma4Variant::kStandard;
  for (int b = 0; b < 256; ++b) {
    if (!standard && (b == 0x0D || b == 0x7E || b == 0xF0)) continue;
    add(fmt::format("<0x{:02X}>", b), 6);
  }
  for (const char* t : {"\n", "\n\n", "\n\n\n\n", "\t", "▁", "▁▁", "▁▁▁▁", "▁unreachable"})
    add(t, 1);
  for (char c = 0x21; c < 0x7F; ++c) {
    if (c != '~' && c != '^' && c != '`' && c != '$') add(std::string(1, c), 1);
  }
  for (const char* t : {"é", "ü", "ß", "ñ", "中", "文", "日", "本", "😀", "—"}) add(t, 1);
  std::vector<std::string> merges;
  for (const auto& [left, right] : gemma4_merge_pairs()) {
    merges.push_back(left + " " + right);
    if (left + right != "qu") add(left + right, 1);
  }
  std::vector<float> scores(tokens.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = -static_cast<float>(i);

  gguf::Writer w;
  w.set("general.architecture", gguf::make_string("llama"));
  w.set("tokenizer.ggml.model", gguf::make_string("gemma4"));
  w.set("tokenizer.ggml.pre", gguf::make_string(standard ? "gemma4" : "llama-bpe"));
  w.set("tokenizer.ggml.tokens", gguf::make_string_array(tokens));
  w.set("tokenizer.ggml.scores", gguf::make_f32_array(scores));
  w.set("tokenizer.ggml.token_type", gguf::make_i32_array(types));
  w.set("tokenizer.ggml.merges", gguf::make_string_array(merges));
  w.set("tokenizer.ggml.bos_token_id", gguf::make_u32(2));
  w.set("tokenizer.ggml.eos_token_id", gguf::make_u32(1));
  w.set("tokenizer.ggml.unknown_token_id", gguf::make_u32(3));
  w.set("tokenizer.ggml.padding_token_id", gguf::make_u32(0));
  w.set("tokenizer.ggml.add_bos_token", gguf::make_bool(standard));
  w.set("tokenizer.ggml.add_eos_token", gguf::make_bool(false));
  return w;
}

}  // namespace ridge::tokenizer::testing
