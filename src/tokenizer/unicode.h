// UTF-8 helpers with llama.cpp's exact leniency, and the GPT-2 byte <-> unicode mapping.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ridge::tokenizer {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the UTF-8 sequence announced by lead byte `c` (1 for continuation/invalid bytes),
// from its high nibble only, as SentencePiece-style tokenizers split text.
inline size_t utf8_lead_len(char c) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[static_cast<uint8_t>(c) >> 4];
}

// Decodes one code point at `*pos`, advancing it. Lenient like llama.cpp: overlong forms and
// surrogates are accepted as decoded; a byte that does not start a complete sequence (or would
// decode above U+10FFFF) becomes U+FFFD and consumes one byte.
uint32_t decode_utf8_lenient(std::string_view s, size_t* pos);

// Appends the UTF-8 encoding of `cpt` (surrogates encoded as 3 bytes; cpt <= 0x10FFFF).
void append_utf8(std::string* out, uint32_t cpt);

// Length of the longest prefix of `s` that is complete, strictly valid UTF-8 sequences, and
// whether the remaining tail could still become valid with more bytes.
struct Utf8Prefix {
  size_t valid_len = 0;      // bytes of complete valid sequences at the start
  size_t invalid_len = 0;    // if > 0: bytes at valid_len that can never be valid (1 sequence)
  bool incomplete = false;   // the tail at valid_len is a proper prefix of a valid sequence
};
Utf8Prefix scan_utf8(std::string_view s);

// The GPT-2 reversible byte -> printable code point table (bytes_to_unicode).
class ByteUnicodeMap {
 public:
  ByteUnicodeMap();
  uint32_t byte_to_cpt(uint8_t b) const { return to_cpt_[b]; }
  // -1 if `cpt` is not the image of a byte.
  int cpt_to_byte(uint32_t cpt) const { return cpt < 324 ? from_cpt_[cpt] : -1; }
  // The byte-level text of `raw` (each byte replaced by its code point), UTF-8 encoded.
  std::string encode(std::string_view raw) const;
  // Inverse of encode(); false if `text` has a code point that is no byte's image.
  bool decode(std::string_view text, std::string* raw) const;

 private:
  std::array<uint32_t, 256> to_cpt_{};
  std::array<int16_t, 324> from_cpt_{};
};

}  // namespace ridge::tokenizer
