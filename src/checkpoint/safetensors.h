// Hugging Face checkpoints' weight files: safetensors (an 8-byte little-endian header length, a
// JSON header naming each tensor's dtype, shape and byte range, then the data), one file or
// several named by model.safetensors.index.json. Read through a read-only mapping: a tensor's
// bytes are used where they lie.
//
// What is refused, each in one line naming the file: a header longer than the file or than
// kMaxHeaderBytes, a header that is not a JSON object of tensors, an unknown dtype, a negative
// or overflowing shape, a byte range whose size is not the shape's, ranges that overlap, leave a
// hole or end past the data (the format's own rule: the tensors tile the data exactly).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ridge::checkpoint {

enum class Dtype : uint8_t {
  kBool, kU8, kI8, kF8E5M2, kF8E4M3, kI16, kU16, kF16, kBF16, kI32, kU32, kF32, kF64, kI64, kU64
};

// "F32", "BF16", ... (the header's spelling).
std::string_view dtype_name(Dtype d);
Result<Dtype> dtype_from_name(std::string_view name);
uint64_t dtype_bytes(Dtype d);

inline constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

struct Tensor {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;   // outermost first (PyTorch's order)
  std::span<const uint8_t> data;
  int64_t n_elements() const;
};

class SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::string& path);
  // The same rules over bytes in memory (not copied); `name` is used in errors.
  static Result<SafetensorsFile> parse(std::span<const uint8_t> bytes, std::string name);

  const std::string& path() const { return path_; }
  // In the header's order.
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const Tensor* find(std::string_view name) const;
  // The header's "__metadata__" (string values only, as the format says).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::shared_ptr<void> mapping_;
  std::string path_;
  std::vector<Tensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Every tensor of a checkpoint folder: model.safetensors, or the files its
// model.safetensors.index.json names (each tensor in the file its weight_map says; a tensor the
// index names but its file lacks, or found in two files, is an error).
class SafetensorsSet {
 public:
  static Result<SafetensorsSet> open_dir(const std::string& dir);

  const std::vector<const Tensor*>& tensors() const { return order_; }
  const Tensor* find(std::string_view name) const;
  const std::vector<SafetensorsFile>& files() const { return files_; }

 private:
  std::vector<SafetensorsFile> files_;
  std::vector<const Tensor*> order_;
  std::map<std::string, const Tensor*, std::less<>> by_name_;
};

}  // namespace ridge::checkpoint
