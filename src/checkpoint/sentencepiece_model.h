// tokenizer.model: a SentencePiece model, a serialized ModelProto (protobuf, proto2). What convert
// reads of it: the pieces (text, score, type), the trainer spec's model type and special ids,
// and the normalizer's add_dummy_prefix. Every other field is skipped by its wire type.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace ridge::checkpoint {

struct SentencePiece {
  std::string piece;
  float score = 0.0f;
  int32_t type = 1;  // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
};

struct SentencePieceModel {
  std::vector<SentencePiece> pieces;
  int32_t model_type = 1;  // trainer_spec.model_type: 1 unigram, 2 BPE, 3 word, 4 char
  int32_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;  // trainer_spec, -1: none
  bool add_dummy_prefix = true;  // normalizer_spec: a space before the text
};

// Parses the file's bytes; a one-line error for a truncated or malformed message, a field of the
// wrong wire type, a piece without text or a type outside 1..6.
Result<SentencePieceModel> parse_sentencepiece_model(std::span<const uint8_t> bytes);

}  // namespace ridge::checkpoint
