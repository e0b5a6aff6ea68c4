#include "offline/quant_mix_rules.h"

#include <charconv>

namespace ridge::offline::mix_rules {
namespace {

using T = GgmlType;
using M = QuantMix;

// The 1-2 bit i-quant mixtures: llama.cpp gives them a branch of their own (embedding and head
// aside), in which the 70B and 8-expert attn_v bumps of the other mixtures do not apply.
bool is_low_iq(M m) {
  return m == M::kIQ2_XXS || m == M::kIQ2_XS || m == M::kIQ2_S || m == M::kIQ2_M ||
         m == M::kIQ1_S || m == M::kIQ1_M;
}
// IQ2_S and IQ2_M raise their sensitive tensors to iq3_s where the other low ones use q2_K.
bool is_iq2_s_or_m(M m) { return m == M::kIQ2_S || m == M::kIQ2_M; }

// llama.cpp's choice of "more bits" layers in the _M mixtures: the first and last eighth and every
// third layer in between (about half).
bool use_more_bits(int64_t i, int64_t n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

GgmlType output_rule(const RuleInput& in, GgmlType base, uint64_t cols) {
  if (in.falcon || cols % traits(base).block_elems != 0) return T::kQ8_0;
  // The mixtures of 3 bits and less (iq3_xxs included, iq3_xs / iq3_s / iq3_m not) keep q5_K.
  if (is_low_iq(in.mix) || in.mix == M::kIQ3_XXS) return T::kQ5_K;
  return base == T::kQ8_0 ? T::kQ8_0 : T::kQ6_K;
}

// The embedding of a model with an output head of its own (a tied one follows output_rule).
GgmlType token_embd_rule(const RuleInput& in, GgmlType t) {
  const auto m = in.mix;
  if (m == M::kIQ2_XXS || m == M::kIQ2_XS || m == M::kIQ1_S || m == M::kIQ1_M) return T::kQ2_K;
  if (is_iq2_s_or_m(m) || m == M::kIQ3_XXS) return T::kIQ3_S;
  if (m == M::kTQ1_0 || m == M::kTQ2_0) return T::kQ4_K;
  return t;
}

// attn_v in the mixtures outside the 1-2 bit branch, before the 70B and 8-expert bumps.
GgmlType attn_v_mixture_rule(const RuleInput& in, GgmlType t) {
  const bool gqa4 = in.n_gqa >= 4;
  switch (in.mix) {
    case M::kQ2_K:
      return gqa4 ? T::kQ4_K : T::kQ3_K;
    case M::kIQ3_XXS:
      return gqa4 ? T::kQ4_K : in.imatrix ? T::kIQ3_XXS : T::kIQ3_S;
    case M::kIQ3_XS:
    case M::kIQ3_S:
      return gqa4 ? T::kQ4_K : t;
    case M::kIQ3_M:
      return T::kQ4_K;
    case M::kQ3_K_M:
      return in.i_attn_v < 2 ? T::kQ5_K : T::kQ4_K;
    case M::kQ3_K_L:
      return T::kQ5_K;
    case M::kIQ4_NL:
    case M::kIQ4_XS:
      return gqa4 ? T::kQ5_K : t;
    case M::kQ4_K_M:
    case M::kQ5_K_M:
      return use_more_bits(in.i_attn_v, in.n_attn_v) ? T::kQ6_K : t;
    case M::kQ4_K_S:
      return in.i_attn_v < 4 ? T::kQ5_K : t;
    default:
      return t;
  }
}

GgmlType attn_v_rule(const RuleInput& in, GgmlType t) {
  if (is_low_iq(in.mix)) {
    if (in.n_gqa >= 4 || in.n_expert >= 4) return T::kQ4_K;
    return is_iq2_s_or_m(in.mix) ? T::kIQ3_S : T::kQ2_K;
  }
  t = attn_v_mixture_rule(in, t);
  // 8 query heads share each attn_v of Llama-2-70B: more bits there cost little.
  if (in.llama_70b && (t == T::kQ3_K || t == T::kQ4_K)) t = T::kQ5_K;
  // llama.cpp: "for the 8-expert model, bumping this to Q8_0 trades just ~128MB".
  if (in.n_expert == 8) t = T::kQ8_0;
  return t;
}

// attn_q and attn_k lose bits in iq3_xxs (to iq2_s) and iq3_xs (to iq3_xxs); 8-expert models give
// attn_k q8_0 (q4_K in the 1-2 bit mixtures).
GgmlType attn_qk_rule(const RuleInput& in, Category cat, GgmlType t) {
  const auto m = in.mix;
  if (is_low_iq(m)) return cat == Category::kAttnK && in.n_expert == 8 ? T::kQ4_K : t;
  if (cat == Category::kAttnK && in.n_expert == 8) return T::kQ8_0;
  if (m == M::kIQ3_XS) return T::kIQ3_XXS;
  if (m == M::kIQ3_XXS) return T::kIQ2_S;
  return t;
}

GgmlType ffn_down_rule(const RuleInput& in, GgmlType t) {
  const auto m = in.mix;
  const int64_t i = in.i_ffn, n = in.n_ffn;
  if (is_low_iq(m)) {
    if (in.i_ffn_down < n / 8) return is_iq2_s_or_m(m) ? T::kIQ3_S : T::kQ2_K;
    return t;
  }
  if (m == M::kQ2_K) return T::kQ3_K;
  if (m == M::kIQ3_XXS && !in.imatrix) return i < n / 8 ? T::kQ4_K : T::kQ3_K;
  if (m == M::kQ3_K_M) {
    return i < n / 16 ? T::kQ5_K : (!in.falcon || use_more_bits(i, n)) ? T::kQ4_K : T::kQ3_K;
  }
  if (m == M::kIQ3_M && (i < n / 8 || (in.n_expert == 8 && use_more_bits(i, n)))) return T::kQ4_K;
  if (m == M::kQ3_K_L) return in.falcon ? T::kQ4_K : T::kQ5_K;
  if (m == M::kQ4_K_M) {
    if (in.falcon) return i < n / 16 ? T::kQ6_K : use_more_bits(i, n) ? T::kQ5_K : T::kQ4_K;
    return use_more_bits(i, n) ? T::kQ6_K : t;
  }
  if ((m == M::kIQ4_NL || m == M::kIQ4_XS) && i < n / 8 && !in.imatrix) return T::kQ5_K;
  if (m == M::kQ5_K_M && use_more_bits(i, n)) return T::kQ6_K;
  if (m == M::kQ4_K_S && !in.falcon && i < n / 8) return T::kQ5_K;
  // llama.cpp guards the first eighth of q4_0 / q5_0 against outliers, only with an imatrix (so
  // that a plain run keeps the old files' types).
  if ((m == M::kQ4_0 || m == M::kQ5_0) && in.imatrix && i < n / 8)
    return m == M::kQ4_0 ? T::kQ4_1 : T::kQ5_1;
  return t;
}

GgmlType attn_output_rule(const RuleInput& in, GgmlType t) {
  const auto m = in.mix;
  if (is_low_iq(m)) {  // no Falcon exception in this branch
    if (in.n_expert == 8) return T::kQ5_K;
    if (m == M::kIQ1_S || m == M::kIQ1_M) return T::kIQ2_XXS;
    return is_iq2_s_or_m(m) ? T::kIQ3_S : t;
  }
  if (in.falcon) return m == M::kQ3_K_L ? T::kQ4_K : t;
  if (in.n_expert == 8) {
    // In 8-expert models the low mixtures (not q3_K_L, q5_K_*, the legacy ones) raise attn_output
    // to q5_K instead.
    const bool low = m == M::kQ2_K || m == M::kQ3_K_S || m == M::kQ3_K_M || m == M::kQ4_K_S ||
                     m == M::kQ4_K_M || m == M::kIQ4_NL || m == M::kIQ4_XS || m == M::kIQ3_XXS ||
                     m == M::kIQ3_XS || m == M::kIQ3_S || m == M::kIQ3_M;
    return low ? T::kQ5_K : t;
  }
  if (m == M::kQ2_K) return T::kQ3_K;
  if (m == M::kIQ3_XXS) return T::kIQ3_S;
  if (m == M::kQ3_K_M || m == M::kIQ3_M) return T::kQ4_K;
  if (m == M::kQ3_K_L) return T::kQ5_K;
  return t;
}

// iq3_xs drops ffn_gate and ffn_up to iq3_xxs outside the first and last eighth of the layers.
GgmlType ffn_gate_up_rule(const RuleInput& in, GgmlType t) {
  const int64_t i = in.i_ffn, n = in.n_ffn;
  if (in.mix == M::kIQ3_XS && i >= n / 8 && i < 7 * n / 8) return T::kIQ3_XXS;
  return t;
}

}  // namespace

Category category_of(std::string_view name) {
  if (name == "output.weight") return Category::kOutput;
  // Gemma 4's per-layer embedding table is a token embedding to llama.cpp.
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight")
    return Category::kTokenEmbd;
  auto has = [&](std::string_view s) { return name.find(s) != std::string_view::npos; };
  if (has("attn_qkv.weight") || has("attn_kv_b.weight") || has("attn_v.weight"))
    return Category::kAttnV;
  if (has("attn_k.weight")) return Category::kAttnK;
  if (has("attn_q.weight")) return Category::kAttnQ;
  if (has("attn_output.weight")) return Category::kAttnOutput;
  if (has("ffn_up")) return Category::kFfnUp;
  if (has("ffn_gate")) return Category::kFfnGate;
  if (has("ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

int64_t layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  int64_t n = -1;
  auto [p, ec] = std::from_chars(name.data() + 4, name.data() + name.size(), n);
  return (ec == std::errc() && p < name.data() + name.size() && *p == '.') ? n : -1;
}

GgmlType rule_type(const RuleInput& in, Category cat, uint64_t cols) {
  const GgmlType base = quant_mix_info(in.mix).base;
  if (cat == Category::kOutput || (in.tied && cat == Category::kTokenEmbd))
    return output_rule(in, base, cols);
  switch (cat) {
    case Category::kTokenEmbd:
      return token_embd_rule(in, base);
    case Category::kAttnV:
      return attn_v_rule(in, base);
    case Category::kAttnK:
    case Category::kAttnQ:
      return attn_qk_rule(in, cat, base);
    case Category::kFfnDown:
      return ffn_down_rule(in, base);
    case Category::kAttnOutput:
      return attn_output_rule(in, base);
    case Category::kFfnGate:
    case Category::kFfnUp:
      return ffn_gate_up_rule(in, base);
    default:
      return base;
  }
}

bool ffn_rules_read_layer(QuantMix mix) { return !is_low_iq(mix); }

}  // namespace ridge::offline::mix_rules
