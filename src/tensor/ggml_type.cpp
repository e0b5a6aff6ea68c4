#include "tensor/ggml_type.h"

#include <cctype>

#include "base/check.h"
#include "base/checked_math.h"

namespace ridge {
namespace {

// Block layouts as defined by ggml (ggml-common.h): QK_K = 256 super-blocks for the K, IQ and
// TQ families, 32-element blocks for the legacy formats, IQ4_NL and MXFP4.
constexpr GgmlTypeTraits kTypes[] = {
    {GgmlType::kF32, "f32", 1, 4},
    {GgmlType::kF16, "f16", 1, 2},
    {GgmlType::kQ4_0, "q4_0", 32, 18},
    {GgmlType::kQ4_1, "q4_1", 32, 20},
    {GgmlType::kQ5_0, "q5_0", 32, 22},
    {GgmlType::kQ5_1, "q5_1", 32, 24},
    {GgmlType::kQ8_0, "q8_0", 32, 34},
    {GgmlType::kQ8_1, "q8_1", 32, 36},
    {GgmlType::kQ2_K, "q2_K", 256, 84},
    {GgmlType::kQ3_K, "q3_K", 256, 110},
    {GgmlType::kQ4_K, "q4_K", 256, 144},
    {GgmlType::kQ5_K, "q5_K", 256, 176},
    {GgmlType::kQ6_K, "q6_K", 256, 210},
    {GgmlType::kQ8_K, "q8_K", 256, 292},
    {GgmlType::kIQ2_XXS, "iq2_xxs", 256, 66},
    {GgmlType::kIQ2_XS, "iq2_xs", 256, 74},
    {GgmlType::kIQ3_XXS, "iq3_xxs", 256, 98},
    {GgmlType::kIQ1_S, "iq1_s", 256, 50},
    {GgmlType::kIQ4_NL, "iq4_nl", 32, 18},
    {GgmlType::kIQ3_S, "iq3_s", 256, 110},
    {GgmlType::kIQ2_S, "iq2_s", 256, 82},
    {GgmlType::kIQ4_XS, "iq4_xs", 256, 136},
    {GgmlType::kI8, "i8", 1, 1},
    {GgmlType::kI16, "i16", 1, 2},
    {GgmlType::kI32, "i32", 1, 4},
    {GgmlType::kI64, "i64", 1, 8},
    {GgmlType::kF64, "f64", 1, 8},
    {GgmlType::kIQ1_M, "iq1_m", 256, 56},
    {GgmlType::kBF16, "bf16", 1, 2},
    {GgmlType::kTQ1_0, "tq1_0", 256, 54},
    {GgmlType::kTQ2_0, "tq2_0", 256, 66},
    {GgmlType::kMXFP4, "mxfp4", 32, 17},
};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id) {
  for (const auto& t : kTypes) {
    if (static_cast<uint32_t>(t.type) == type_id) return t;
  }
  return std::nullopt;
}

const GgmlTypeTraits& traits(GgmlType type) {
  for (const auto& t : kTypes) {
    if (t.type == type) return t;
  }
  RIDGE_CHECK(false && "unknown GgmlType");
}

std::string_view ggml_type_name(GgmlType type) { return traits(type).name; }

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  for (const auto& t : kTypes) {
    if (iequals(t.name, name)) return t.type;
  }
  return std::nullopt;
}

std::optional<uint64_t> ggml_row_bytes(GgmlType type, uint64_t n_elems) {
  const auto& t = traits(type);
  if (n_elems % t.block_elems != 0) return std::nullopt;
  return checked_mul(n_elems / t.block_elems, t.block_bytes);
}

const GgmlTypeTraits* ggml_all_types(size_t* count) {
  *count = sizeof(kTypes) / sizeof(kTypes[0]);
  return kTypes;
}

GgmlType fallback_type(GgmlType type, uint64_t cols) {
  auto fits = [cols](GgmlType t) { return cols % traits(t).block_elems == 0; };
  if (fits(type)) return type;
  GgmlType alt = GgmlType::kF16;
  switch (type) {
    case GgmlType::kQ2_K: case GgmlType::kQ3_K: case GgmlType::kTQ1_0: case GgmlType::kTQ2_0: alt = GgmlType::kQ4_0; break;
    case GgmlType::kIQ1_S: case GgmlType::kIQ1_M: case GgmlType::kIQ2_XXS: case GgmlType::kIQ2_XS: case GgmlType::kIQ2_S: case GgmlType::kIQ3_XXS:
    case GgmlType::kIQ3_S: case GgmlType::kIQ4_XS: alt = GgmlType::kIQ4_NL; break;
    case GgmlType::kQ4_K: alt = GgmlType::kQ5_0; break;
    case GgmlType::kQ5_K: alt = GgmlType::kQ5_1; break;
    case GgmlType::kQ6_K: alt = GgmlType::kQ8_0; break;
    default: break;
  }
  return fits(alt) ? alt : GgmlType::kF16;
}

}  // namespace ridge
