#include "kv/kv_type.h"

#include <cctype>
#include <string>

namespace ridge::kv {

Result<KvType> kv_type_from_name(std::string_view name) {
  std::string n(name);
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "f32") return KvType::kF32;
  if (n == "f16") return KvType::kF16;
  if (n == "bf16") return KvType::kBF16;
  if (n == "q8_0") return KvType::kQ8_0;
  if (n == "fp8" || n == "f8" || n == "fp8_e4m3") return KvType::kFP8;
  return usage_error("unknown KV type '{}' (f32, f16, bf16, q8_0, fp8)", name);
}

std::string_view kv_type_name(KvType type) {
  switch (type) {
    case KvType::kF32: return "f32";
    case KvType::kF16: return "f16";
    case KvType::kBF16: return "bf16";
    case KvType::kQ8_0: return "q8_0";
    case KvType::kFP8: return "fp8";
  }
  return "?";
}

double kv_bytes_per_element(KvType type) {
  switch (type) {
    case KvType::kF32: return 4.0;
    case KvType::kF16: case KvType::kBF16: return 2.0;
    case KvType::kQ8_0: return static_cast<double>(kQ8BlockBytes) / kQ8Block;
    case KvType::kFP8: return 1.0;
  }
  return 0.0;
}

uint64_t kv_row_bytes(KvType type, int64_t head_dim) {
  if (head_dim <= 0 || head_dim > (int64_t{1} << 20)) return 0;
  const auto hd = static_cast<uint64_t>(head_dim);
  switch (type) {
    case KvType::kF32: return hd * 4;
    case KvType::kF16: case KvType::kBF16: return hd * 2;
    case KvType::kQ8_0: return head_dim % kQ8Block == 0 ? hd / kQ8Block * kQ8BlockBytes : 0;
    case KvType::kFP8: return hd;
  }
  return 0;
}

bool kv_type_on_cpu(KvType type) { return type != KvType::kFP8; }

}  // namespace ridge::kv
