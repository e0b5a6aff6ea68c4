// Tensor element types of GGUF/ggml, with their exact block sizes.
// The numeric values are the on-disk type ids; they must never change.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ridge {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct GgmlTypeTraits {
  GgmlType type;
  std::string_view name;   // as ggml spells it: "f32", "q4_K", ...
  uint32_t block_elems;    // elements per block (1 for plain types)
  uint32_t block_bytes;    // bytes per block
};

// Traits of a known type id; nullopt for an id no current GGUF file uses.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id);
// Traits of a known type (CHECKs that it is known).
const GgmlTypeTraits& traits(GgmlType type);
std::string_view ggml_type_name(GgmlType type);
// Case-insensitive lookup by name ("q4_k", "Q8_0", "bf16"); nullopt if unknown.
std::optional<GgmlType> ggml_type_from_name(std::string_view name);

// Bytes of one row of `n_elems` elements; nullopt when n_elems is not a multiple of the
// block size or the size overflows.
std::optional<uint64_t> ggml_row_bytes(GgmlType type, uint64_t n_elems);

// All known types, in id order.
const GgmlTypeTraits* ggml_all_types(size_t* count);

// llama.cpp's replacement when a row of `cols` elements does not fill whole blocks of `type`
// (llama-quant.cpp, tensor_type_fallback): q2_K/q3_K/tq1_0/tq2_0 -> q4_0, q4_K -> q5_0, q5_K ->
// q5_1, q6_K -> q8_0, the 256-element iq formats (iq1_s ... iq3_s, iq4_xs) -> iq4_nl; f16 when that
// still does not fit, and for a 32-element format that does not fit (as recent llama.cpp).
// `type` when it fits.
GgmlType fallback_type(GgmlType type, uint64_t cols);

}  // namespace ridge
