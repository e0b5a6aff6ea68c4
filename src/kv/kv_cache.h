// Paged KV storage: for every layer, K and V tensors cut into fixed-size blocks of `block_size`
// token slots. Which blocks belong to which sequence is decided elsewhere (the block pool / the
// scheduler); this class only stores tensors and knows nothing about sequences.
//
// Layout of one layer's K (V is the same):  [n_blocks, n_head_kv, block_size, head_dim]
// so that the K rows of one KV head inside one block are contiguous (block_size rows of
// kv_row_bytes(type, head_dim) bytes): attention streams one block of one head in its stored type.
// A token's slot is block_id * block_size + offset_in_block.
//
// Two block spaces (n_blocks_window > 0): the layers marked in `window_layers` (sliding-window
// layers, which never read past their window) keep their K/V in blocks of their own, numbered
// 0..n_blocks_window-1, so the engine can hand a window block back once it is out of every
// window while the global layers keep the position's K/V. Each layer's slots and blocks are of
// its space (space_of(layer)); model/batch.h carries a block table and a slot per token for each.
//
// Types: kv/kv_type.h (f16 by default; f32, bf16, q8_0; not fp8, a GPU backend's), docs/kv.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/device_memory.h"
#include "base/status.h"
#include "kv/recurrent_state.h"
#include "kv/kv_space.h"
#include "kv/kv_type.h"

namespace ridge::kv {

// One layer's K (or V) rows per token: n_head_kv rows of head_dim values.
struct KvLayerShape {
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  bool operator==(const KvLayerShape&) const = default;
};

struct KvCacheConfig {
  int64_t n_layer = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  int64_t block_size = 16;   // token slots per block
  int64_t n_blocks = 0;
  KvType type = KvType::kF16;
  // Models with linear-attention layers: their per-sequence states (state.n_slots 0: none).
  // n_layer above counts only the layers that keep K/V.
  RecurrentStateConfig state;
  // Per layer where layers differ (gemma4's sliding-window and global layers); empty: every
  // layer is n_head_kv x head_dim.
  std::vector<KvLayerShape> layer_shapes;
  // The window space (0: none, every layer's blocks are of the main space): its block count and,
  // per layer, 1 where the layer keeps its K/V there.
  int64_t n_blocks_window = 0;
  std::vector<uint8_t> window_layers;

  KvLayerShape layer(int64_t l) const {
    return layer_shapes.empty() ? KvLayerShape{n_head_kv, head_dim} : layer_shapes[static_cast<size_t>(l)];
  }
  KvSpace space_of(int64_t l) const {
    return n_blocks_window > 0 && window_layers[static_cast<size_t>(l)] != 0 ? KvSpace::kWindow : KvSpace::kMain;
  }
  int64_t n_blocks_of(KvSpace s) const { return s == KvSpace::kWindow ? n_blocks_window : n_blocks; }
};

// The reasons a config cannot make a cache (sizes, type, head_dim vs type), as one-line errors.
// n_blocks may be 0 here (a budget computation); create() needs it positive.
Status kv_check_config(const KvCacheConfig& cfg);

// Bytes one block takes across all layers, K and V together; 0 if the config is invalid.
uint64_t kv_block_bytes(const KvCacheConfig& cfg);
// The same for the layers of one space (with no window space, kMain is every layer).
uint64_t kv_block_bytes(const KvCacheConfig& cfg, KvSpace space);
// The number of blocks that fit in `budget_bytes` (cfg.n_blocks is ignored).
int64_t kv_blocks_for_budget(const KvCacheConfig& cfg, uint64_t budget_bytes);

// Row conversions in the cache's formats (n values; for q8_0 n is a multiple of 32).
void kv_store_row(KvType type, const float* src, uint8_t* dst, int64_t n);
void kv_load_row(KvType type, const void* src, float* dst, int64_t n);

class KvCache {
 public:
  // Allocates the storage (validated by kv_check_config, positive n_blocks, no overflow) in
  // `memory` (a backend's, Backend::memory()), the recurrent state's too.
  static Result<KvCache> create(const KvCacheConfig& cfg, DeviceMemory& memory = host_memory());

  KvCache(KvCache&&) noexcept = default;
  KvCache& operator=(KvCache&&) noexcept = default;

  const KvCacheConfig& config() const { return cfg_; }
  int64_t n_blocks() const { return cfg_.n_blocks; }
  int64_t n_blocks_window() const { return cfg_.n_blocks_window; }
  int64_t block_size() const { return cfg_.block_size; }
  int64_t n_slots() const { return cfg_.n_blocks * cfg_.block_size; }
  KvSpace space_of(int64_t layer) const { return cfg_.space_of(layer); }
  KvType type() const { return cfg_.type; }
  uint64_t row_bytes(int64_t layer) const { return layers_[static_cast<size_t>(layer)].row_bytes; }  // one token, one head
  uint64_t total_bytes() const;  // the K/V blocks (states(): the recurrent state's own)
  RecurrentState& states() { return states_; }
  const RecurrentState& states() const { return states_; }

  // K (or V) rows of KV head `head` in block `block` of `layer`: block_size rows of
  // row_bytes(layer) bytes in type(), contiguous, in the memory's device.
  const void* k_block(int64_t layer, int64_t block, int64_t head) const;
  const void* v_block(int64_t layer, int64_t block, int64_t head) const;

  // Stores one token's K and V (each [n_head_kv * head_dim] f32 of that layer, head-major) into `slot`
  // (of the layer's space), converting to type(). A slot inside the space is the caller's
  // invariant (CHECKed). write and read convert on the host, a row at a time through the
  // memory's copies where it is a device's (tests; a device backend writes its K/V in its own
  // kernels).
  void write(int64_t layer, int64_t slot, const float* k, const float* v);
  // The inverse: the stored K and V of `slot` as f32 ([n_head_kv * head_dim] each).
  void read(int64_t layer, int64_t slot, float* k, float* v) const;

 private:
  struct Layer {
    uint8_t* k = nullptr;  // into storage_
    uint8_t* v = nullptr;
    int64_t n_head_kv = 0, head_dim = 0;
    int64_t n_blocks = 0;  // of its space
    uint64_t row_bytes = 0;
  };
  explicit KvCache(const KvCacheConfig& cfg) : cfg_(cfg) {}
  uint64_t block_offset_bytes(const Layer& l, int64_t block, int64_t head) const;
  uint64_t slot_offset_bytes(const Layer& l, int64_t slot, int64_t head) const;

  KvCacheConfig cfg_;
  DeviceBuffer storage_;      // every layer's K and V (kStream: huge pages on the host)
  std::vector<Layer> layers_;
  RecurrentState states_;
};

}  // namespace ridge::kv
