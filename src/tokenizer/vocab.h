// The vocabulary of a tokenizer as llama.cpp derives it from GGUF metadata: token texts, scores,
// attributes, special ids and flags, plus the lookup tables the encoders need.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "tokenizer/unicode.h"

namespace ridge::gguf {
class File;
}

namespace ridge::tokenizer {

// Token attributes (bit set). GGUF stores one token type per token; llama.cpp turns it into
// these bits and then adds kControl to well-known end/FIM tokens found by their text.
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
};

enum class VocabType { kSpm, kBpe };
// Pre-tokenizer regex sets (see pretokenizer.cpp).
// kGemma4: newline runs and the runs between them only, on raw UTF-8 (not byte-level text).
enum class PreType { kDefault, kGpt2, kLlama3, kQwen2, kQwen35, kStarcoder, kFalcon, kGpt4o, kGemma4 };

// Everything read from the file, before interpretation. Optional ids are absent keys.
struct VocabData {
  std::string model;  // tokenizer.ggml.model: "llama", "gpt2" or "gemma4"
  std::string pre;    // tokenizer.ggml.pre ("" when absent)
  std::vector<std::string> tokens;
  std::vector<float> scores;          // empty when absent
  std::vector<int32_t> token_types;   // empty when absent
  std::vector<std::string> merges;    // BPE only
  bool has_merges = false;            // the key exists (an empty list is valid)
  std::optional<int64_t> bos, eos, eot, eom, unk, pad;
  std::optional<int64_t> fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
};

// Reads the tokenizer.* keys of `file` into VocabData.
Result<VocabData> read_vocab_data(const gguf::File& file);

// Hash that lets unordered_map<std::string, T> be searched with a string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename T>
using StringMap = std::unordered_map<std::string, T, StringHash, std::equal_to<>>;

struct BpeMerge {
  int32_t rank;
  int32_t merged_id;  // id of the merged raw bytes, -1 if not in the vocabulary
};

class Vocab {
 public:
  // Interprets `data` exactly as llama.cpp does (defaults per model/pre type, metadata
  // overrides, end-of-generation detection). `name` is used in error messages.
  static Result<Vocab> build(VocabData data, std::string_view name);

  VocabType type = VocabType::kSpm;
  PreType pre_type = PreType::kDefault;
  std::string model_name;  // "llama", "gpt2" or "gemma4"
  std::string pre_name;    // normalised: "default", "gpt-2", "llama-bpe", "qwen2", "gpt-4o", "gemma4", ...

  std::vector<std::string> text;  // as stored (byte-level text for BPE, "▁" for SPM and gemma4)
  std::vector<float> score;
  std::vector<uint32_t> attr;
  std::vector<std::string> piece;  // decoded bytes of each token (special tokens: their text)
  StringMap<int32_t> text_to_id;   // exact stored text

  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1;
  bool add_bos = false, add_eos = false, add_space_prefix = false, ignore_merges = false;
  // BPE on raw UTF-8 (gemma4): token texts and merges are not byte-level text, words start as
  // one symbol per UTF-8 character, and spaces are written as "▁" both ways.
  bool raw_utf8_bpe = false;
  std::vector<int32_t> eog_ids;       // sorted
  std::vector<int32_t> special_ids;   // control/user-defined/unknown, longest text first

  // BPE tables in raw-byte space: the byte-level text of every token decoded to the bytes it
  // stands for, so encoding never builds byte-level strings (raw_utf8_bpe: the text as stored).
  StringMap<int32_t> raw_to_id;
  std::vector<int32_t> byte_id;  // [256] id of the single raw byte, or -1
  std::vector<int32_t> hex_byte_id;  // raw_utf8_bpe: [256] id of the <0xNN> token, or -1
  std::unordered_map<uint64_t, BpeMerge> merge_by_ids;  // key: left_id << 32 | right_id
  StringMap<int32_t> merge_by_text;  // key: 4-byte left length + left + right -> rank

  // SPM byte fallback: <0xNN> token of each byte (or -1).
  std::vector<int32_t> spm_byte_id;

  int32_t n_vocab() const { return static_cast<int32_t>(text.size()); }
  bool valid(int32_t id) const { return id >= 0 && id < n_vocab(); }
  int32_t find(std::string_view s) const {
    auto it = text_to_id.find(s);
    return it == text_to_id.end() ? -1 : it->second;
  }
};

std::string merge_text_key(std::string_view left, std::string_view right);

}  // namespace ridge::tokenizer
