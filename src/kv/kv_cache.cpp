#include "kv/kv_cache.h"

#include <cstdlib>
#include <cstring>

#include "tensor/fp16.h"

namespace ridge::kv {
namespace {

constexpr uint64_t kAlignment = 64;

uint64_t elem_bytes_of(GgmlType type) {
  switch (type) {
    case GgmlType::kF16: return 2;
    case GgmlType::kF32: return 4;
    default: return 0;
  }
}

// Elements of one layer's K (or V); 0 on overflow.
uint64_t layer_elems(const KvCacheConfig& cfg) {
  uint64_t n = static_cast<uint64_t>(cfg.n_blocks);
  for (int64_t f : {cfg.n_head_kv, cfg.block_size, cfg.head_dim}) {
    if (f <= 0) return 0;
    if (n > UINT64_MAX / static_cast<uint64_t>(f)) return 0;
    n *= static_cast<uint64_t>(f);
  }
  return n;
}

}  // namespace

void KvCache::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

uint64_t kv_block_bytes(const KvCacheConfig& cfg) {
  KvCacheConfig one = cfg;
  one.n_blocks = 1;
  const uint64_t eb = elem_bytes_of(cfg.type);
  const uint64_t per_layer = layer_elems(one);
  if (eb == 0 || per_layer == 0 || cfg.n_layer <= 0) return 0;
  const uint64_t per_layer_bytes = per_layer * eb * 2;  // K and V
  if (per_layer_bytes > UINT64_MAX / static_cast<uint64_t>(cfg.n_layer)) return 0;
  return per_layer_bytes * static_cast<uint64_t>(cfg.n_layer);
}

int64_t kv_blocks_for_budget(const KvCacheConfig& cfg, uint64_t budget_bytes) {
  const uint64_t b = kv_block_bytes(cfg);
  if (b == 0) return 0;
  return static_cast<int64_t>(budget_bytes / b);
}

Result<KvCache> KvCache::create(const KvCacheConfig& cfg) {
  if (cfg.n_layer <= 0 || cfg.n_head_kv <= 0 || cfg.head_dim <= 0 || cfg.block_size <= 0 ||
      cfg.n_blocks <= 0) {
    return error("kv cache: invalid config (layers {}, kv heads {}, head dim {}, block size {}, "
                 "blocks {}): all must be positive",
                 cfg.n_layer, cfg.n_head_kv, cfg.head_dim, cfg.block_size, cfg.n_blocks);
  }
  const uint64_t eb = elem_bytes_of(cfg.type);
  if (eb == 0) {
    return error("kv cache: type {} not supported (use f16 or f32)", ggml_type_name(cfg.type));
  }
  const uint64_t elems = layer_elems(cfg);
  if (elems == 0 || elems > UINT64_MAX / eb - kAlignment) {
    return error("kv cache: {} blocks of {} tokens overflow the address space", cfg.n_blocks,
                 cfg.block_size);
  }
  const uint64_t bytes = (elems * eb + kAlignment - 1) / kAlignment * kAlignment;
  KvCache cache(cfg);
  cache.elem_bytes_ = eb;
  for (int64_t l = 0; l < cfg.n_layer; ++l) {
    for (auto* list : {&cache.k_, &cache.v_}) {
      auto* p = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, bytes));
      if (p == nullptr) {
        return error("kv cache: cannot allocate {} bytes for layer {} ({} blocks)", bytes, l,
                     cfg.n_blocks);
      }
      list->emplace_back(p);
    }
  }
  return cache;
}

uint64_t KvCache::total_bytes() const {
  return kv_block_bytes(cfg_) * static_cast<uint64_t>(cfg_.n_blocks);
}

uint64_t KvCache::block_offset_bytes(int64_t block, int64_t head) const {
  RIDGE_CHECK(block >= 0 && block < cfg_.n_blocks && head >= 0 && head < cfg_.n_head_kv);
  const uint64_t row = static_cast<uint64_t>(block * cfg_.n_head_kv + head);
  return row * static_cast<uint64_t>(cfg_.block_size * cfg_.head_dim) * elem_bytes_;
}

const void* KvCache::k_block(int64_t layer, int64_t block, int64_t head) const {
  return k_[static_cast<size_t>(layer)].get() + block_offset_bytes(block, head);
}

const void* KvCache::v_block(int64_t layer, int64_t block, int64_t head) const {
  return v_[static_cast<size_t>(layer)].get() + block_offset_bytes(block, head);
}

void KvCache::write_row(uint8_t* base, int64_t slot, const float* src) {
  const int64_t block = slot / cfg_.block_size;
  const int64_t offset = slot % cfg_.block_size;
  const int64_t hd = cfg_.head_dim;
  for (int64_t h = 0; h < cfg_.n_head_kv; ++h) {
    uint8_t* dst = base + block_offset_bytes(block, h) + static_cast<uint64_t>(offset * hd) * elem_bytes_;
    const float* s = src + h * hd;
    if (cfg_.type == GgmlType::kF32) {
      std::memcpy(dst, s, static_cast<size_t>(hd) * sizeof(float));
    } else {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < hd; ++i) d[i] = f32_to_fp16(s[i]);
    }
  }
}

void KvCache::write(int64_t layer, int64_t slot, const float* k, const float* v) {
  RIDGE_CHECK(layer >= 0 && layer < cfg_.n_layer && slot >= 0 && slot < n_slots());
  write_row(k_[static_cast<size_t>(layer)].get(), slot, k);
  write_row(v_[static_cast<size_t>(layer)].get(), slot, v);
}

}  // namespace ridge::kv
