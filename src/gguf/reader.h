// Memory-mapped (or read into huge pages), bounds-checked GGUF v2/v3 reader.
//
// Every count, length, offset and product read from the file is checked; any problem becomes a
// one-line Status naming the file, the field and the byte offset. Tensor types are only checked
// to be known here; whether the engine can compute a type is decided when a model is loaded.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "gguf/value.h"
#include "tensor/ggml_type.h"

namespace ridge::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
inline constexpr uint64_t kDefaultAlignment = 32;

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> shape;  // ggml order: shape[0] is the contiguous (innermost) dimension
  GgmlType type = GgmlType::kF32;
  uint64_t offset = 0;          // relative to the start of the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // points into the mapping

  uint64_t rows() const;  // product of shape[1..]
  uint64_t cols() const { return shape.empty() ? 1 : shape[0]; }
};

// Resource limits that keep a hostile file from forcing huge allocations.
struct ReadLimits {
  uint64_t max_tensors = 1u << 20;
  uint64_t max_kv = 1u << 20;
  uint64_t max_string_bytes = 1u << 26;     // 64 MiB for one string
  uint64_t max_array_items = 1ull << 28;
  uint32_t max_array_depth = 8;
  uint32_t max_dims = 4;                    // GGML_MAX_DIMS
  uint64_t max_metadata_items = 1ull << 28;  // total values across all arrays
};

// Where a file's bytes live once opened.
enum class Backing {
  kMapped,     // a read-only mapping of the file (page cache, 4 KiB pages): instant to open
  kHugePages,  // read into anonymous memory advised into huge pages (base/huge_pages.h):
               // costs a copy at open, then every pass over the weights streams faster
};

// "huge pages" or "mapped".
std::string_view backing_name(Backing backing);

class File {
 public:
  // Maps (or reads) and parses `path`. kHugePages falls back to kMapped when the copy would not
  // fit in the memory the system reports available (backing() says which one was used).
  static Result<File> open(const std::string& path, const ReadLimits& limits = {},
                           Backing backing = Backing::kMapped);
  // Parses bytes this File then owns (`owner` keeps them alive) and may rewrite (writable_bytes;
  // backing kHugePages): a file made in memory, e.g. a converted checkpoint.
  static Result<File> adopt(std::shared_ptr<void> owner, std::span<uint8_t> bytes, std::string name,
                            const ReadLimits& limits = {});
  // Parses bytes already in memory (not copied: they must outlive the File). `name` is used in
  // error messages.
  static Result<File> parse(std::span<const uint8_t> bytes, std::string name,
                            const ReadLimits& limits = {});

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return bytes_.size(); }
  std::span<const uint8_t> bytes() const { return bytes_; }
  // The same bytes, writable, when they are this File's own copy (Backing::kHugePages); empty
  // for a mapping or parsed bytes. Whoever writes must be the File's only user.
  std::span<uint8_t> writable_bytes() { return writable_; }
  Backing backing() const { return backing_; }

  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  const Value* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters: a missing key or a value of the wrong type is an error naming the key.
  Result<int64_t> get_int(std::string_view key) const;
  Result<uint64_t> get_uint(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string> get_string(std::string_view key) const;
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<float>> get_float_array(std::string_view key) const;
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;
  Result<std::vector<bool>> get_bool_array(std::string_view key) const;
  // Same, with a default when the key is absent (a present key of the wrong type is an error).
  Result<int64_t> get_int_or(std::string_view key, int64_t fallback) const;
  Result<double> get_float_or(std::string_view key, double fallback) const;
  Result<bool> get_bool_or(std::string_view key, bool fallback) const;
  Result<std::string> get_string_or(std::string_view key, std::string fallback) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

  // general.architecture, or "" if absent.
  std::string architecture() const;

 private:
  class Parser;
  std::shared_ptr<void> mapping_;  // keeps the mapping or the copy alive (null for parse())
  std::span<const uint8_t> bytes_;
  std::span<uint8_t> writable_;
  Backing backing_ = Backing::kMapped;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<TensorInfo> tensors_;
};

}  // namespace ridge::gguf
