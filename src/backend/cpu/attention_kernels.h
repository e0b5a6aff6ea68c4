// The two inner loops of paged attention over one block of one KV head, reading the cache in its
// stored type (f32, f16, bf16, q8_0; kv/kv_cache.h) and converting in registers: no f32 copy of
// the block is made. One implementation per ISA (scalar here, x86_avx2/, x86_avx512/), chosen
// from the model's kernel table (kernels::Isa) like the matmul kernels.
//
// Determinism: every score is one dot product whose accumulation order depends only on head_dim,
// and every output element accumulates its rows in ascending order, whatever the number of
// queries processed together: a token's result does not depend on how tokens are grouped.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"
#include "kv/kv_type.h"

namespace ridge::backend::cpu {

// The queries processed together against one KV head: `n_tok` consecutive tokens of one
// sequence times the `group` query heads sharing the KV head. Query q = tt * group + h lives at
// q + tt * tok_stride + h * hd (and its output at the same offset from out).
struct AttnQueries {
  const float* q = nullptr;
  float* out = nullptr;
  int64_t tok_stride = 0;
  int64_t group = 1;
  int64_t n_q = 0;  // n_tok * group
  int64_t hd = 0;

  const float* q_at(int64_t i) const { return q + (i / group) * tok_stride + (i % group) * hd; }
  float* out_at(int64_t i) const { return out + (i / group) * tok_stride + (i % group) * hd; }
};

struct AttnKernels {
  // scores[q * ld + j] = scale * <query q, K_j> for rows j in [0, n_rows), every query.
  // k: n_rows rows of kv_row_bytes(type, hd) bytes.
  void (*qk)(kv::KvType type, const void* k, int64_t n_rows, const AttnQueries& qs, float scale,
             float* scores, int64_t ld);
  // out_q += p[q * ld + j] * V_j for rows j in [0, n_rows), ascending, for the queries
  // q >= attn_first_query(j, skip, group) (the tile's later tokens see more rows: causal).
  void (*pv)(kv::KvType type, const void* v, int64_t n_rows, const float* p, int64_t ld,
             int64_t skip, const AttnQueries& qs);
  // In-place softmax of n scores (numerically stable: exp(x - max) / sum).
  void (*softmax)(float* x, int64_t n);
};

// Per ISA (attention_ref.cpp, x86_avx2/attention.cpp, x86_avx512/attention.cpp); isa_table.h
// picks one for a head_dim.
const AttnKernels& attn_kernels_ref();
const AttnKernels& attn_kernels_avx2();
const AttnKernels& attn_kernels_avx512();

// First query that sees row j (see AttnKernels::pv).
inline int64_t attn_first_query(int64_t j, int64_t skip, int64_t group) {
  const int64_t t = j + skip;
  return t > 0 ? t * group : 0;
}

}  // namespace ridge::backend::cpu
