// GGUF v3 writer producing files llama.cpp loads. Metadata keeps insertion order; tensor data is
// produced by a callback when the file is written, so multi-GB files never sit in memory whole.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "gguf/value.h"
#include "tensor/ggml_type.h"

namespace ridge::gguf {

class Writer {
 public:
  // Fills `dst` (exactly the tensor's byte size) with the tensor's data.
  using FillFn = std::function<Status(std::span<uint8_t> dst)>;
  // Called after each tensor is written: (bytes written so far, total bytes).
  using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

  explicit Writer(uint64_t alignment = 32) : alignment_(alignment) {}

  // Sets (or replaces) a metadata key.
  void set(std::string key, Value value);
  // Removes a metadata key; false when it was not set.
  bool erase(std::string_view key);
  // Adds a tensor; shape in ggml order (shape[0] innermost). Fails on a duplicate name, a shape
  // that does not fit the type's block size, or an overflowing size.
  Status add_tensor(std::string name, GgmlType type, std::vector<uint64_t> shape, FillFn fill);
  // Convenience: copies `data` (must be exactly the tensor's size).
  Status add_tensor_data(std::string name, GgmlType type, std::vector<uint64_t> shape,
                         std::span<const uint8_t> data);

  uint64_t total_tensor_bytes() const;
  // The tensors added so far, in order (views valid until the next add_tensor): what the file
  // will list, without producing any data.
  struct TensorEntry {
    std::string_view name;
    GgmlType type;
    std::span<const uint64_t> shape;
  };
  std::vector<TensorEntry> tensor_entries() const;
  Status write(const std::string& path, const ProgressFn& progress = {}) const;
  // Serialises the whole file into memory (tests, fuzz seeds).
  Result<std::vector<uint8_t>> write_to_memory() const;
  // The file's size in bytes, and the file written into `dst` of exactly that size.
  uint64_t file_size() const;
  Status write_to(std::span<uint8_t> dst) const;

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> shape;
    uint64_t n_bytes;
    FillFn fill;
  };
  std::vector<uint8_t> header() const;  // magic to the aligned end of the tensor infos
  Status emit(const std::function<Status(std::span<const uint8_t>)>& sink,
              const ProgressFn& progress) const;
  uint64_t alignment_;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace ridge::gguf
