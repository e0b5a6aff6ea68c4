#include "checkpoint/sentencepiece_model.h"

#include <cstring>

namespace ridge::checkpoint {
namespace {

// Protobuf's wire format: each field a varint key (number << 3 | wire type), then a varint
// (type 0), 8 bytes (1), a varint length and that many bytes (2), or 4 bytes (5).
class Reader {
 public:
  Reader(std::span<const uint8_t> b, const char* what) : b_(b), what_(what) {}
  bool done() const { return at_ >= b_.size(); }

  Result<uint64_t> varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= b_.size()) return truncated();
      const uint8_t byte = b_[at_++];
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return v;
    }
    return error("tokenizer.model: {}: a varint longer than 10 bytes at byte {}", what_, at_);
  }
  Result<std::span<const uint8_t>> bytes() {
    RIDGE_ASSIGN_OR_RETURN(const uint64_t n, varint());
    if (n > b_.size() - at_) return truncated();
    const auto s = b_.subspan(at_, static_cast<size_t>(n));
    at_ += static_cast<size_t>(n);
    return s;
  }
  Result<float> fixed32_float() {
    if (b_.size() - at_ < 4) return truncated();
    float f;
    std::memcpy(&f, b_.data() + at_, 4);  // little-endian, as x86
    at_ += 4;
    return f;
  }
  // Skips a field of this wire type.
  Status skip(uint32_t wire) {
    switch (wire) {
      case 0: return varint().status();
      case 1:
        if (b_.size() - at_ < 8) return truncated();
        at_ += 8;
        return ok_status();
      case 2: return bytes().status();
      case 5:
        if (b_.size() - at_ < 4) return truncated();
        at_ += 4;
        return ok_status();
      default: return error("tokenizer.model: {}: wire type {} at byte {} (not a protobuf message)", what_, wire, at_);
    }
  }
  Status expect(uint32_t wire, uint32_t want, uint64_t field) const {
    if (wire == want) return ok_status();
    return error("tokenizer.model: {}: field {} has wire type {}, expected {}", what_, field, wire, want);
  }

 private:
  Status truncated() const { return error("tokenizer.model: {}: truncated at byte {}", what_, at_); }
  std::span<const uint8_t> b_;
  const char* what_;
  size_t at_ = 0;
};

Result<SentencePiece> parse_piece(std::span<const uint8_t> b) {
  Reader r(b, "a piece");
  SentencePiece p;
  bool has_text = false;
  while (!r.done()) {
    RIDGE_ASSIGN_OR_RETURN(const uint64_t key, r.varint());
    const uint64_t field = key >> 3;
    const auto wire = static_cast<uint32_t>(key & 7);
    if (field == 1) {
      RIDGE_RETURN_IF_ERROR(r.expect(wire, 2, field));
      RIDGE_ASSIGN_OR_RETURN(const auto s, r.bytes());
      p.piece.assign(s.begin(), s.end());
      has_text = true;
    } else if (field == 2) {
      RIDGE_RETURN_IF_ERROR(r.expect(wire, 5, field));
      RIDGE_ASSIGN_OR_RETURN(p.score, r.fixed32_float());
    } else if (field == 3) {
      RIDGE_RETURN_IF_ERROR(r.expect(wire, 0, field));
      RIDGE_ASSIGN_OR_RETURN(const uint64_t t, r.varint());
      if (t < 1 || t > 6) return error("tokenizer.model: piece type {} (1..6)", t);
      p.type = static_cast<int32_t>(t);
    } else {
      RIDGE_RETURN_IF_ERROR(r.skip(wire));
    }
  }
  if (!has_text || p.piece.empty()) return error("tokenizer.model: a piece without text");
  return p;
}

Status parse_trainer_spec(std::span<const uint8_t> b, SentencePieceModel& m) {
  Reader r(b, "trainer_spec");
  while (!r.done()) {
    RIDGE_ASSIGN_OR_RETURN(const uint64_t key, r.varint());
    const uint64_t field = key >> 3;
    const auto wire = static_cast<uint32_t>(key & 7);
    int32_t* target = field == 3 ? &m.model_type : field == 40 ? &m.unk_id : field == 41 ? &m.bos_id
                    : field == 42 ? &m.eos_id : field == 43 ? &m.pad_id : nullptr;
    if (target == nullptr) {
      RIDGE_RETURN_IF_ERROR(r.skip(wire));
      continue;
    }
    RIDGE_RETURN_IF_ERROR(r.expect(wire, 0, field));
    RIDGE_ASSIGN_OR_RETURN(const uint64_t v, r.varint());
    *target = static_cast<int32_t>(static_cast<int64_t>(v));  // int32: negatives as 10-byte varints
  }
  return ok_status();
}

Status parse_normalizer_spec(std::span<const uint8_t> b, SentencePieceModel& m) {
  Reader r(b, "normalizer_spec");
  while (!r.done()) {
    RIDGE_ASSIGN_OR_RETURN(const uint64_t key, r.varint());
    const uint64_t field = key >> 3;
    const auto wire = static_cast<uint32_t>(key & 7);
    if (field != 3) {
      RIDGE_RETURN_IF_ERROR(r.skip(wire));
      continue;
    }
    RIDGE_RETURN_IF_ERROR(r.expect(wire, 0, field));
    RIDGE_ASSIGN_OR_RETURN(const uint64_t v, r.varint());
    m.add_dummy_prefix = v != 0;
  }
  return ok_status();
}

}  // namespace

Result<SentencePieceModel> parse_sentencepiece_model(std::span<const uint8_t> bytes) {
  Reader r(bytes, "model");
  SentencePieceModel m;
  while (!r.done()) {
    RIDGE_ASSIGN_OR_RETURN(const uint64_t key, r.varint());
    const uint64_t field = key >> 3;
    const auto wire = static_cast<uint32_t>(key & 7);
    if (field < 1 || field > 3) {
      RIDGE_RETURN_IF_ERROR(r.skip(wire));
      continue;
    }
    RIDGE_RETURN_IF_ERROR(r.expect(wire, 2, field));
    RIDGE_ASSIGN_OR_RETURN(const auto sub, r.bytes());
    if (field == 1) {
      RIDGE_ASSIGN_OR_RETURN(SentencePiece p, parse_piece(sub));
      m.pieces.push_back(std::move(p));
    } else if (field == 2) {
      RIDGE_RETURN_IF_ERROR(parse_trainer_spec(sub, m));
    } else {
      RIDGE_RETURN_IF_ERROR(parse_normalizer_spec(sub, m));
    }
  }
  if (m.pieces.empty()) return error("tokenizer.model: no pieces (not a SentencePiece model)");
  return m;
}

}  // namespace ridge::checkpoint
