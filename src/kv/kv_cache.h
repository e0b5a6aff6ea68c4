// Paged KV storage: for every layer, K and V tensors cut into fixed-size blocks of `block_size`
// token slots. Which blocks belong to which sequence is decided elsewhere (the block pool / the
// scheduler); this class only stores tensors and knows nothing about sequences.
//
// Layout of one layer's K (V is the same):  [n_blocks, n_head_kv, block_size, head_dim]
// so that the K rows of one KV head inside one block are contiguous (block_size * head_dim
// elements): attention converts one block of one head to f32 with a single row conversion.
// A token's slot is block_id * block_size + offset_in_block.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "tensor/ggml_type.h"

namespace ridge::kv {

struct KvCacheConfig {
  int64_t n_layer = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  int64_t block_size = 16;   // token slots per block
  int64_t n_blocks = 0;
  GgmlType type = GgmlType::kF16;  // kF16 (default, as llama.cpp) or kF32
};

// Bytes one block takes across all layers, K and V together; 0 if the config is invalid.
uint64_t kv_block_bytes(const KvCacheConfig& cfg);
// The number of blocks that fit in `budget_bytes` (cfg.n_blocks is ignored).
int64_t kv_blocks_for_budget(const KvCacheConfig& cfg, uint64_t budget_bytes);

class KvCache {
 public:
  // Allocates the storage (validated: positive sizes, supported type, no overflow).
  static Result<KvCache> create(const KvCacheConfig& cfg);

  KvCache(KvCache&&) noexcept = default;
  KvCache& operator=(KvCache&&) noexcept = default;

  const KvCacheConfig& config() const { return cfg_; }
  int64_t n_blocks() const { return cfg_.n_blocks; }
  int64_t block_size() const { return cfg_.block_size; }
  int64_t n_slots() const { return cfg_.n_blocks * cfg_.block_size; }
  GgmlType type() const { return cfg_.type; }
  uint64_t total_bytes() const;

  // K (or V) rows of KV head `head` in block `block` of `layer`: [block_size, head_dim] elements
  // of type(), contiguous.
  const void* k_block(int64_t layer, int64_t block, int64_t head) const;
  const void* v_block(int64_t layer, int64_t block, int64_t head) const;

  // Stores one token's K and V (each [n_head_kv * head_dim] f32, head-major) into `slot`,
  // converting to type(). slot < n_slots() is the caller's invariant (CHECKed).
  void write(int64_t layer, int64_t slot, const float* k, const float* v);

 private:
  explicit KvCache(const KvCacheConfig& cfg) : cfg_(cfg) {}
  uint64_t block_offset_bytes(int64_t block, int64_t head) const;
  void write_row(uint8_t* base, int64_t slot, const float* src);

  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  using Buffer = std::unique_ptr<uint8_t, FreeDeleter>;

  KvCacheConfig cfg_;
  uint64_t elem_bytes_ = 0;
  std::vector<Buffer> k_;  // per layer
  std::vector<Buffer> v_;  // per layer
};

}  // namespace ridge::kv
