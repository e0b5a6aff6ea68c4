#include "backend/cpu/paged_attention.h"
#include "backend/cpu/model_names.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "backend/cpu/attention_kernels.h"
#include "backend/cpu/isa_table.h"
#include "model/ops.h"

namespace ridge::backend::cpu {
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

// A unit of work: one tile and KV heads [g0, g0 + n_g). A decode token's unit takes several
// heads and walks them block by block: their K (then V) rows of one block are adjacent in the
// cache, so the unit reads one contiguous run per block instead of a 4 KiB piece every 32 KiB
// (a prompt tile keeps one head: its scores are tile_tokens times larger).
struct Unit {
  int64_t tile = 0;
  int64_t g0 = 0;
  int64_t n_g = 1;
};

// How many blocks ahead of the one it reads a unit prefetches K / V into L2; the first blocks are
// requested before the walk (docs/tuning.md, "Attention").
constexpr int64_t kPrefetchBlocks = 2;

// Locality 2: into L2 (the walk kPrefetchBlocks ahead); 3: into L1 (the next piece).
template <int kLocality>
void prefetch_rows(const void* p, uint64_t bytes) {
  const auto* c = static_cast<const char*>(p);
  for (uint64_t o = 0; o < bytes; o += 64) __builtin_prefetch(c + o, 0, kLocality);
}

// One unit: every query head of its KV heads against the sequence's blocks. Each head's scores,
// softmax and sums are those of the head alone (the heads only share the walk over the blocks).
void attend_unit(const AttentionArgs& a, const AttnKernels& ak, const Tile& tile, const Unit& u,
                 float* scratch) {
  const Batch& b = *a.batch;
  const kv::KvCache& cache = *a.cache;
  const int64_t hd = a.head_dim;
  const int64_t bs = cache.block_size();
  const int64_t group = a.n_head / a.n_head_kv;
  const auto t0 = static_cast<size_t>(tile.t0);
  const int64_t p0 = b.positions[t0];
  const int64_t n_ctx = p0 + tile.n_tok;  // of the tile's last token: causal by position
  const std::span<const int32_t> table = b.block_table(b.seq_index[t0], cache.space_of(a.layer));
  const int64_t n_blocks = (n_ctx + bs - 1) / bs;
  const int64_t ld = n_blocks * bs;  // scores of head h: [n_q, ld] at scratch + h * n_q * ld
  const uint64_t block_bytes = static_cast<uint64_t>(bs) * cache.row_bytes(a.layer);
  const auto block_of = [&](int64_t blk) { return table[static_cast<size_t>(blk)]; };

  AttnQueries qs;
  qs.tok_stride = a.n_head * hd;
  qs.group = group;
  qs.n_q = tile.n_tok * group;
  qs.hd = hd;
  AttnQueries heads[kAttnTileTokens];  // make_units: n_g <= tile_tokens(group) <= kAttnTileTokens
  RIDGE_CHECK(u.n_g <= kAttnTileTokens);
  for (int64_t h = 0; h < u.n_g; ++h) {
    AttnQueries& q = heads[h];
    q = qs;
    q.q = a.q + tile.t0 * qs.tok_stride + (u.g0 + h) * group * hd;
    q.out = a.out + tile.t0 * qs.tok_stride + (u.g0 + h) * group * hd;
  }
  const auto head = [&](int64_t h) -> const AttnQueries& { return heads[h]; };
  const auto scores = [&](int64_t h) { return scratch + h * qs.n_q * ld; };

  // K, then V, block by block, each read prefetching the rows kPrefetchBlocks blocks on (past the
  // last K block, the first V blocks) into L2; the first blocks are requested before the walk
  // starts. Each piece (one head's rows of one block) also asks for the next piece of the walk
  // into L1 before its own loads; two or three pieces ahead were no better than one
  // (docs/tuning.md, "Attention").
  // A sliding window: the blocks before the earliest window of the tile are never read.
  const int64_t first_blk = a.window > 0 ? kv::first_window_block(p0, a.window, bs) : 0;
  const auto next_piece = [&](int64_t blk, int64_t h) -> const void* {
    const int64_t t = blk * u.n_g + h + 1;  // K pieces in walk order, then V pieces
    const int64_t nb = t / u.n_g, g = u.g0 + t % u.n_g;
    if (nb < n_blocks) return cache.k_block(a.layer, block_of(nb), g);
    const int64_t vb = nb - n_blocks + first_blk;
    return vb < n_blocks ? cache.v_block(a.layer, block_of(vb), g) : nullptr;
  };
  for (int64_t blk = first_blk; blk < std::min(first_blk + kPrefetchBlocks, n_blocks); ++blk) {
    for (int64_t h = 0; h < u.n_g; ++h) prefetch_rows<2>(cache.k_block(a.layer, block_of(blk), u.g0 + h), block_bytes);
  }
  for (int64_t blk = first_blk; blk < n_blocks; ++blk) {
    const int64_t n_rows = std::min(bs, n_ctx - blk * bs);
    const int64_t next = blk + kPrefetchBlocks;
    for (int64_t h = 0; h < u.n_g; ++h) {
      if (next < n_blocks) {
        prefetch_rows<2>(cache.k_block(a.layer, block_of(next), u.g0 + h), block_bytes);
      } else if (next - n_blocks + first_blk < n_blocks) {
        prefetch_rows<2>(cache.v_block(a.layer, block_of(next - n_blocks + first_blk), u.g0 + h), block_bytes);
      }
      if (const void* p = next_piece(blk, h)) prefetch_rows<3>(p, block_bytes);
      ak.qk(cache.type(), cache.k_block(a.layer, block_of(blk), u.g0 + h), n_rows, head(h), a.scale,
            scores(h) + blk * bs, ld);
    }
  }
  for (int64_t h = 0; h < u.n_g; ++h) {
    const AttnQueries q = head(h);
    const float* sink = a.sinks ? a.sinks + (u.g0 + h) * group : nullptr;
    for (int64_t i = 0; i < qs.n_q; ++i) {
      std::memset(q.out_at(i), 0, static_cast<size_t>(hd) * sizeof(float));
      // Query i sees positions [w, its own]; the read rows before w weigh exactly 0.
      const int64_t pos = p0 + i / group;
      const int64_t w = a.window > 0 ? std::max<int64_t>(0, pos - a.window + 1) : 0;
      float* sc = scores(h) + i * ld;
      std::fill(sc + first_blk * bs, sc + std::max(w, first_blk * bs), 0.0f);
      if (a.softcap > 0.0f) {
        for (int64_t p = w; p <= pos; ++p) sc[p] = a.softcap * std::tanh(sc[p] / a.softcap);
      }
      if (sink != nullptr) {
        softmax_with_sink(sc + w, pos + 1 - w, sink[i % group]);
      } else {
        ak.softmax(sc + w, pos + 1 - w);
      }
    }
  }
  for (int64_t blk = first_blk; blk < n_blocks; ++blk) {
    const int64_t n_rows = std::min(bs, n_ctx - blk * bs);
    for (int64_t h = 0; h < u.n_g; ++h) {
      if (blk + kPrefetchBlocks < n_blocks) {
        prefetch_rows<2>(cache.v_block(a.layer, block_of(blk + kPrefetchBlocks), u.g0 + h), block_bytes);
      }
      if (const void* p = next_piece(n_blocks + blk, h)) prefetch_rows<3>(p, block_bytes);
      ak.pv(cache.type(), cache.v_block(a.layer, block_of(blk), u.g0 + h), n_rows, scores(h) + blk * bs,
            ld, blk * bs - p0, head(h));
    }
  }
}

// Query-key products below which a step's attention runs on the calling thread. A pool region
// costs ~0.25 us (2 threads). Qwen3-0.6B's decode steps at 4-31 positions, whose attention the
// 2^16 used before kept on one thread while the other waited, measured a median 1.015x faster on
// both (in-process A/B of decode steps, 8 runs of 26 steps at 2 threads: 7 at 1.00-1.03, one 0.84).
constexpr int64_t kParallelAttentionWork = int64_t{1} << 13;

// The units of the batch: a one-token tile's KV heads in contiguous runs of up to
// tile_tokens(group) heads (its scores then fit the scratch a prompt tile of one head takes),
// about one run per thread; a prompt tile's heads one by one.
void make_units(const std::vector<Tile>& tiles, int64_t n_head_kv, int64_t group, int nth,
                std::vector<Unit>& units) {
  units.clear();
  const int64_t per_thread = (n_head_kv + nth - 1) / nth;
  const int64_t run = std::max<int64_t>(1, std::min(tile_tokens(group), per_thread));
  for (size_t t = 0; t < tiles.size(); ++t) {
    const int64_t n_g = tiles[t].n_tok == 1 ? run : 1;
    for (int64_t g = 0; g < n_head_kv; g += n_g) {
      units.push_back({static_cast<int64_t>(t), g, std::min(n_g, n_head_kv - g)});
    }
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
  const AttnKernels& ak = isa_table(a.kernels->isa).attention(a.head_dim);
  // Kept per calling thread, so a decode step's 28 calls reuse their capacity instead of
  // allocating. Bound to references: inside the pool's lambda a thread_local's name would mean
  // the worker's own (empty) copy.
  thread_local std::vector<Tile> t_tiles;
  thread_local std::vector<Unit> t_units;
  std::vector<Tile>& tiles = t_tiles;
  std::vector<Unit>& units = t_units;
  make_tiles(*a.batch, tile_tokens(group), tiles);
  // Small steps (tiny models, a first few positions) run on the calling thread: waking the pool
  // would cost more than the work.
  int64_t work = 0;
  for (int64_t t = 0; t < a.batch->n_tokens(); ++t) work += a.batch->positions[static_cast<size_t>(t)] + 1;
  work *= a.n_head * a.head_dim;
  const bool alone = pool.size() == 1 || work < kParallelAttentionWork;
  make_units(tiles, a.n_head_kv, group, alone ? 1 : pool.size(), units);
  const auto n_units = static_cast<int64_t>(units.size());
  auto run = [&](int ith, int nth) {
    // Strided: later tokens of a prompt have longer contexts, so contiguous chunks would leave
    // the last thread with most of the work.
    float* scratch = a.scratch + ith * a.scratch_per_thread;
    for (int64_t i = ith; i < n_units; i += nth) {
      const Unit& u = units[static_cast<size_t>(i)];
      attend_unit(a, ak, tiles[static_cast<size_t>(u.tile)], u, scratch);
    }
  };
  if (alone || n_units == 1) {
    run(0, 1);
  } else {
    pool.run(run);
  }
}

}  // namespace ridge::backend::cpu
