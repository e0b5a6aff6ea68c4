#include "model/attention.h"

#include <algorithm>
#include <cstring>

#include "model/attention_kernels.h"
#include "model/ops.h"

namespace ridge::model {
namespace {

constexpr int64_t kMaxQueriesPerTile = 64;

int64_t tile_tokens(int64_t group) {
  return std::max<int64_t>(1, std::min(kAttnTileTokens, kMaxQueriesPerTile / group));
}

// Consecutive tokens [t0, t0 + n_tok) of one sequence at consecutive positions.
struct Tile {
  int64_t t0 = 0;
  int64_t n_tok = 0;
};

// Splits the batch into tiles of up to max_tok tokens. The split only changes which tokens share
// a pass over the blocks, never a token's result.
void make_tiles(const Batch& b, int64_t max_tok, std::vector<Tile>& tiles) {
  tiles.clear();
  for (int64_t t = 0; t < b.n_tokens(); ++t) {
    const auto i = static_cast<size_t>(t);
    if (!tiles.empty()) {
      Tile& last = tiles.back();
      const auto prev = static_cast<size_t>(t - 1);
      if (last.n_tok < max_tok && b.seq_index[i] == b.seq_index[prev] &&
          b.positions[i] == b.positions[prev] + 1) {
        ++last.n_tok;
        continue;
      }
    }
    tiles.push_back({t, 1});
  }
}

// One (tile, KV head g) unit: all its query heads against the sequence's blocks.
void attend_tile(const AttentionArgs& a, const AttnKernels& ak, const Tile& tile, int64_t g,
                 float* scores) {
  const Batch& b = *a.batch;
  const kv::KvCache& cache = *a.cache;
  const int64_t hd = a.head_dim;
  const int64_t bs = cache.block_size();
  const int64_t group = a.n_head / a.n_head_kv;
  const auto t0 = static_cast<size_t>(tile.t0);
  const int64_t p0 = b.positions[t0];
  const int64_t n_ctx = p0 + tile.n_tok;  // of the tile's last token: causal by position
  const auto& table = b.block_tables[static_cast<size_t>(b.seq_index[t0])];
  const int64_t n_blocks = (n_ctx + bs - 1) / bs;
  const int64_t ld = n_blocks * bs;    // scores: [n_q, ld]

  AttnQueries qs;
  qs.tok_stride = a.n_head * hd;
  qs.q = a.q + tile.t0 * qs.tok_stride + g * group * hd;
  qs.out = a.out + tile.t0 * qs.tok_stride + g * group * hd;
  qs.group = group;
  qs.n_q = tile.n_tok * group;
  qs.hd = hd;

  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    const int64_t n_rows = std::min(bs, n_ctx - blk * bs);
    ak.qk(cache.type(), cache.k_block(a.layer, table[static_cast<size_t>(blk)], g), n_rows, qs,
          a.scale, scores + blk * bs, ld);
  }
  for (int64_t q = 0; q < qs.n_q; ++q) {
    std::memset(qs.out_at(q), 0, static_cast<size_t>(hd) * sizeof(float));
    ak.softmax(scores + q * ld, p0 + q / group + 1);  // query q sees positions 0..its own
  }
  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    const int64_t n_rows = std::min(bs, n_ctx - blk * bs);
    ak.pv(cache.type(), cache.v_block(a.layer, table[static_cast<size_t>(blk)], g), n_rows,
          scores + blk * bs, ld, blk * bs - p0, qs);
  }
}

}  // namespace

int64_t attention_scratch_floats(int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                                 int64_t block_size, int64_t max_context) {
  (void)head_dim;
  const int64_t group = n_head / n_head_kv;
  const int64_t ld = (max_context + block_size - 1) / block_size * block_size;
  return tile_tokens(group) * group * ld + 16;
}

void paged_attention(const AttentionArgs& a, ThreadPool& pool) {
  const int64_t group = a.n_head / a.n_head_kv;
  const AttnKernels& ak = attn_kernels_for(a.kernels->isa, a.cache->type(), a.head_dim);
  std::vector<Tile> tiles;
  make_tiles(*a.batch, tile_tokens(group), tiles);
  const auto n_units = static_cast<int64_t>(tiles.size()) * a.n_head_kv;
  auto run = [&](int ith, int nth) {
    // Strided: later tokens of a prompt have longer contexts, so contiguous chunks would leave
    // the last thread with most of the work.
    float* scratch = a.scratch + ith * a.scratch_per_thread;
    for (int64_t u = ith; u < n_units; u += nth) {
      attend_tile(a, ak, tiles[static_cast<size_t>(u / a.n_head_kv)], u % a.n_head_kv, scratch);
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
