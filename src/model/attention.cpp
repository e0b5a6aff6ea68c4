#include "model/attention.h"

#include <algorithm>
#include <cstring>

#include "model/ops.h"

namespace ridge::model {
namespace {

// Rows [0, n) of a block of one KV head as f32: converted into `buf` unless already f32.
const float* block_f32(const kv::KvCache& cache, const kernels::Kernels& k, const void* block,
                      int64_t n_elems, float* buf) {
  if (cache.type() == GgmlType::kF32) return static_cast<const float*>(block);
  k.dequantize_row(cache.type(), block, buf, n_elems);
  return buf;
}

// One (token, KV head) unit: the `group` query heads sharing KV head g.
void attend_unit(const AttentionArgs& a, int64_t t, int64_t g, float* scratch) {
  const Batch& b = *a.batch;
  const kv::KvCache& cache = *a.cache;
  const int64_t hd = a.head_dim;
  const int64_t bs = cache.block_size();
  const int64_t group = a.n_head / a.n_head_kv;
  const int64_t n_ctx = b.positions[static_cast<size_t>(t)] + 1;  // causal by position
  const auto& table = b.block_tables[static_cast<size_t>(b.seq_index[static_cast<size_t>(t)])];
  const int64_t n_blocks = (n_ctx + bs - 1) / bs;

  float* kbuf = scratch;               // [block_size, head_dim]
  float* scores = kbuf + bs * hd;      // [group, n_ctx]
  const int64_t q_stride = a.n_head * hd;
  const float* q = a.q + t * q_stride + g * group * hd;  // [group, head_dim]
  float* out = a.out + t * q_stride + g * group * hd;    // [group, head_dim]

  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    const int64_t n_valid = std::min(bs, n_ctx - blk * bs);
    const float* kb = block_f32(cache, *a.kernels,
                                cache.k_block(a.layer, table[static_cast<size_t>(blk)], g),
                                n_valid * hd, kbuf);
    for (int64_t h = 0; h < group; ++h) {
      float* s = scores + h * n_ctx + blk * bs;
      for (int64_t j = 0; j < n_valid; ++j) s[j] = dot_f32(q + h * hd, kb + j * hd, hd) * a.scale;
    }
  }
  for (int64_t h = 0; h < group; ++h) softmax(scores + h * n_ctx, n_ctx);
  std::memset(out, 0, static_cast<size_t>(group * hd) * sizeof(float));
  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    const int64_t n_valid = std::min(bs, n_ctx - blk * bs);
    const float* vb = block_f32(cache, *a.kernels,
                                cache.v_block(a.layer, table[static_cast<size_t>(blk)], g),
                                n_valid * hd, kbuf);
    for (int64_t h = 0; h < group; ++h) {
      const float* p = scores + h * n_ctx + blk * bs;
      for (int64_t j = 0; j < n_valid; ++j) axpy_f32(p[j], vb + j * hd, out + h * hd, hd);
    }
  }
}

}  // namespace

int64_t attention_scratch_floats(int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                                 int64_t block_size, int64_t max_context) {
  return block_size * head_dim + (n_head / n_head_kv) * max_context + 16;
}

void paged_attention(const AttentionArgs& a, ThreadPool& pool) {
  const int64_t n_units = a.batch->n_tokens() * a.n_head_kv;
  auto run = [&](int ith, int nth) {
    // Strided: later tokens of a prompt have longer contexts, so contiguous chunks would leave
    // the last thread with most of the work.
    float* scratch = a.scratch + ith * a.scratch_per_thread;
    for (int64_t u = ith; u < n_units; u += nth) {
      attend_unit(a, u / a.n_head_kv, u % a.n_head_kv, scratch);
    }
  };
  // Small steps (tiny models, short contexts) run on the calling thread: waking the pool would
  // cost more than the work.
  int64_t work = 0;
  for (int64_t t = 0; t < a.batch->n_tokens(); ++t) work += a.batch->positions[static_cast<size_t>(t)] + 1;
  work *= a.n_head * a.head_dim;
  if (pool.size() == 1 || n_units == 1 || work < (int64_t{1} << 16)) {
    run(0, 1);
  } else {
    pool.run(run);
  }
}

}  // namespace ridge::model
