#include "kv/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tensor/fp16.h"
#include "tensor/fp16_row.h"

namespace ridge::kv {
namespace {

constexpr uint64_t kAlignment = 64;

// Rows (token x head) of layer l's K (or V); 0 on overflow or a non-positive factor.
uint64_t layer_rows(const KvCacheConfig& cfg, int64_t l) {
  uint64_t n = 1;
  for (int64_t f : {cfg.n_blocks_of(cfg.space_of(l)), cfg.layer(l).n_head_kv, cfg.block_size}) {
    if (f <= 0) return 0;
    if (n > UINT64_MAX / static_cast<uint64_t>(f)) return 0;
    n *= static_cast<uint64_t>(f);
  }
  return n;
}

void store_q8_0(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQ8Block; ++b) {
    const float* x = src + b * kQ8Block;
    uint8_t* blk = dst + b * kQ8BlockBytes;
    float amax = 0.0f;
    for (int64_t i = 0; i < kQ8Block; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = f32_to_fp16(d);
    std::memcpy(blk, &dh, 2);
    for (int64_t i = 0; i < kQ8Block; ++i) {
      const auto q = static_cast<int8_t>(std::round(x[i] * id));  // half away from zero
      std::memcpy(blk + 2 + i, &q, 1);
    }
  }
}

void load_q8_0(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQ8Block; ++b) {
    const uint8_t* blk = src + b * kQ8BlockBytes;
    uint16_t dh;
    std::memcpy(&dh, blk, 2);
    const float d = fp16_to_f32(dh);
    for (int64_t i = 0; i < kQ8Block; ++i) {
      dst[b * kQ8Block + i] = d * static_cast<float>(static_cast<int8_t>(blk[2 + i]));
    }
  }
}

}  // namespace


Status kv_check_config(const KvCacheConfig& cfg) {
  if (cfg.n_layer <= 0 || cfg.n_head_kv <= 0 || cfg.head_dim <= 0 || cfg.block_size <= 0 ||
      cfg.n_blocks < 0) {
    return error("kv cache: invalid config (layers {}, kv heads {}, head dim {}, block size {}, "
                 "blocks {}): all must be positive",
                 cfg.n_layer, cfg.n_head_kv, cfg.head_dim, cfg.block_size, cfg.n_blocks);
  }
  if (!cfg.layer_shapes.empty() && static_cast<int64_t>(cfg.layer_shapes.size()) != cfg.n_layer) {
    return error("kv cache: {} layer shapes for {} layers", cfg.layer_shapes.size(), cfg.n_layer);
  }
  if (cfg.n_blocks_window < 0 ||
      (cfg.n_blocks_window > 0 && static_cast<int64_t>(cfg.window_layers.size()) != cfg.n_layer)) {
    return error("kv cache: a window space of {} blocks with {} layer marks for {} layers",
                 cfg.n_blocks_window, cfg.window_layers.size(), cfg.n_layer);
  }
  for (const KvLayerShape& l : cfg.layer_shapes) {
    if (l.n_head_kv <= 0 || l.head_dim <= 0) {
      return error("kv cache: invalid layer shape (kv heads {}, head dim {})", l.n_head_kv, l.head_dim);
    }
  }
  if (!kv_type_on_cpu(cfg.type)) {
    return usage_error("kv cache: type {} needs a GPU backend; the CPU stores f16, bf16, q8_0 or "
                       "f32", kv_type_name(cfg.type));
  }
  for (int64_t l = 0; l < cfg.n_layer; ++l) {
    if (kv_row_bytes(cfg.type, cfg.layer(l).head_dim) == 0) {
      return usage_error("kv cache: type q8_0 needs a head_dim that is a multiple of 32, this "
                         "model's is {} (use --kv-type f16 or bf16)", cfg.layer(l).head_dim);
    }
  }
  return ok_status();
}

namespace {

// One block's bytes over the layers for which `in` holds (K and V); 0 if the config is invalid.
template <typename Pred>
uint64_t block_bytes_where(const KvCacheConfig& cfg, Pred in) {
  KvCacheConfig one = cfg;
  one.n_blocks = 1;
  if (one.n_blocks_window > 0) one.n_blocks_window = 1;
  if (!kv_check_config(one).ok()) return 0;
  uint64_t total = 0;
  for (int64_t l = 0; l < cfg.n_layer; ++l) {
    if (!in(l)) continue;
    const uint64_t rows = layer_rows(one, l);
    const uint64_t rb = kv_row_bytes(cfg.type, cfg.layer(l).head_dim);
    if (rows == 0 || rows > UINT64_MAX / rb / 2) return 0;
    const uint64_t layer_bytes = rows * rb * 2;  // K and V
    if (layer_bytes > UINT64_MAX - total) return 0;
    total += layer_bytes;
  }
  return total;
}

}  // namespace

uint64_t kv_block_bytes(const KvCacheConfig& cfg) {
  return block_bytes_where(cfg, [](int64_t) { return true; });
}

uint64_t kv_block_bytes(const KvCacheConfig& cfg, KvSpace space) {
  return block_bytes_where(cfg, [&](int64_t l) { return cfg.space_of(l) == space; });
}

int64_t kv_blocks_for_budget(const KvCacheConfig& cfg, uint64_t budget_bytes) {
  const uint64_t b = kv_block_bytes(cfg);
  if (b == 0) return 0;
  return static_cast<int64_t>(budget_bytes / b);
}

void kv_store_row(KvType type, const float* src, uint8_t* dst, int64_t n) {
  switch (type) {
    case KvType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case KvType::kF16:
      return f32_to_fp16_row(src, dst, n);
    case KvType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case KvType::kQ8_0: store_q8_0(src, dst, n); return;
    default: RIDGE_CHECK(false && "kv_store_row: type not supported");
  }
}

void kv_load_row(KvType type, const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint8_t*>(src);
  uint16_t h;
  switch (type) {
    case KvType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case KvType::kF16:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(&h, s + 2 * i, 2);
        dst[i] = fp16_to_f32(h);
      }
      return;
    case KvType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(&h, s + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
      }
      return;
    case KvType::kQ8_0: load_q8_0(s, dst, n); return;
    default: RIDGE_CHECK(false && "kv_load_row: type not supported");
  }
}

Result<KvCache> KvCache::create(const KvCacheConfig& cfg, DeviceMemory& memory) {
  RIDGE_RETURN_IF_ERROR(kv_check_config(cfg));
  if (cfg.n_blocks <= 0) return error("kv cache: {} blocks: must be positive", cfg.n_blocks);
  KvCache cache(cfg);
  std::vector<uint64_t> array_bytes;  // one layer's K (or V), aligned
  uint64_t total = 0;
  for (int64_t l = 0; l < cfg.n_layer; ++l) {
    const KvLayerShape shape = cfg.layer(l);
    const uint64_t rb = kv_row_bytes(cfg.type, shape.head_dim);
    const uint64_t rows = layer_rows(cfg, l);
    if (rows == 0 || rows > (UINT64_MAX - kAlignment) / rb) {
      return error("kv cache: {} blocks of {} tokens overflow the address space", cfg.n_blocks,
                   cfg.block_size);
    }
    const uint64_t bytes = (rows * rb + kAlignment - 1) / kAlignment * kAlignment;
    if (bytes > (UINT64_MAX - total) / 2) {
      return error("kv cache: {} blocks of {} tokens overflow the address space", cfg.n_blocks,
                   cfg.block_size);
    }
    total += 2 * bytes;
    array_bytes.push_back(bytes);
    cache.layers_.push_back(Layer{nullptr, nullptr, shape.n_head_kv, shape.head_dim,
                                  cfg.n_blocks_of(cfg.space_of(l)), rb});
  }
  Result<DeviceBuffer> storage =
      memory.allocate(static_cast<size_t>(std::max<uint64_t>(total, 1)), MemoryUse::kStream);
  if (!storage.ok()) {
    return error("kv cache: cannot allocate {} bytes ({} layers, {} blocks) in {} memory", total,
                 cfg.n_layer, cfg.n_blocks, memory.name());
  }
  cache.storage_ = std::move(*storage);
  auto* p = static_cast<uint8_t*>(cache.storage_.get());
  for (size_t l = 0; l < cache.layers_.size(); ++l) {
    cache.layers_[l].k = p;
    cache.layers_[l].v = p + array_bytes[l];
    p += 2 * array_bytes[l];
  }
  if (cfg.state.n_slots > 0) {
    RIDGE_ASSIGN_OR_RETURN(cache.states_, RecurrentState::create(cfg.state, memory));
  }
  return cache;
}

uint64_t KvCache::total_bytes() const {
  return kv_block_bytes(cfg_, KvSpace::kMain) * static_cast<uint64_t>(cfg_.n_blocks) +
         kv_block_bytes(cfg_, KvSpace::kWindow) * static_cast<uint64_t>(cfg_.n_blocks_window);
}

uint64_t KvCache::block_offset_bytes(const Layer& l, int64_t block, int64_t head) const {
  RIDGE_CHECK(block >= 0 && block < l.n_blocks && head >= 0 && head < l.n_head_kv);
  const uint64_t row = static_cast<uint64_t>(block * l.n_head_kv + head);
  return row * static_cast<uint64_t>(cfg_.block_size) * l.row_bytes;
}

uint64_t KvCache::slot_offset_bytes(const Layer& l, int64_t slot, int64_t head) const {
  const int64_t block = slot / cfg_.block_size;
  const int64_t offset = slot % cfg_.block_size;
  return block_offset_bytes(l, block, head) + static_cast<uint64_t>(offset) * l.row_bytes;
}

const void* KvCache::k_block(int64_t layer, int64_t block, int64_t head) const {
  const Layer& l = layers_[static_cast<size_t>(layer)];
  return l.k + block_offset_bytes(l, block, head);
}

const void* KvCache::v_block(int64_t layer, int64_t block, int64_t head) const {
  const Layer& l = layers_[static_cast<size_t>(layer)];
  return l.v + block_offset_bytes(l, block, head);
}

void KvCache::write(int64_t layer, int64_t slot, const float* k, const float* v) {
  RIDGE_CHECK(layer >= 0 && layer < cfg_.n_layer && slot >= 0);
  const Layer& l = layers_[static_cast<size_t>(layer)];
  RIDGE_CHECK(slot < l.n_blocks * cfg_.block_size);
  const int64_t hd = l.head_dim;
  DeviceMemory* mem = storage_.memory();
  std::vector<uint8_t> staged(mem->host_visible() ? 0 : l.row_bytes);
  for (int64_t h = 0; h < l.n_head_kv; ++h) {
    const uint64_t off = slot_offset_bytes(l, slot, h);
    if (staged.empty()) {
      kv_store_row(cfg_.type, k + h * hd, l.k + off, hd);
      kv_store_row(cfg_.type, v + h * hd, l.v + off, hd);
      continue;
    }
    kv_store_row(cfg_.type, k + h * hd, staged.data(), hd);  // through a host row to the device
    mem->to_device(l.k + off, staged.data(), staged.size());
    kv_store_row(cfg_.type, v + h * hd, staged.data(), hd);
    mem->to_device(l.v + off, staged.data(), staged.size());
  }
}

void KvCache::read(int64_t layer, int64_t slot, float* k, float* v) const {
  RIDGE_CHECK(layer >= 0 && layer < cfg_.n_layer && slot >= 0);
  const Layer& l = layers_[static_cast<size_t>(layer)];
  RIDGE_CHECK(slot < l.n_blocks * cfg_.block_size);
  const int64_t hd = l.head_dim;
  DeviceMemory* mem = storage_.memory();
  std::vector<uint8_t> staged(mem->host_visible() ? 0 : l.row_bytes);
  for (int64_t h = 0; h < l.n_head_kv; ++h) {
    const uint64_t off = slot_offset_bytes(l, slot, h);
    if (staged.empty()) {
      kv_load_row(cfg_.type, l.k + off, k + h * hd, hd);
      kv_load_row(cfg_.type, l.v + off, v + h * hd, hd);
      continue;
    }
    mem->to_host(staged.data(), l.k + off, staged.size());
    kv_load_row(cfg_.type, staged.data(), k + h * hd, hd);
    mem->to_host(staged.data(), l.v + off, staged.size());
    kv_load_row(cfg_.type, staged.data(), v + h * hd, hd);
  }
}

}  // namespace ridge::kv
