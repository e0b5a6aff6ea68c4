// The per-tensor rules of llama.cpp's mixtures (llama-quant.cpp, llama_tensor_get_type_impl):
// which type one quantizable tensor gets, given the mixture, what the rules know of the model and
// the tensor's place among its kind. What quant_mix.cpp (choose_tensor_types,
// standard_tensor_type) shares with quant_mix_rules.cpp. Internal to offline/.
#pragma once

#include <cstdint>
#include <string_view>

#include "offline/quant_mix.h"
#include "tensor/ggml_type.h"

namespace ridge::offline::mix_rules {

// llama.cpp's tensor categories (tensor_get_category), tested in its order. The expert tensors
// fall into the FFN categories by substring: ffn_gate_exps / ffn_gate_shexp are ffn_gate,
// ffn_up_exps / ffn_up_shexp ffn_up, ffn_down_exps / ffn_down_shexp ffn_down (the router
// ffn_gate_inp never gets here: it is not quantizable). attn_qkv and attn_kv_b carry the values
// too: llama.cpp gives them attn_v's rules.
enum class Category {
  kTokenEmbd,
  kOutput,
  kAttnV,
  kAttnK,
  kAttnQ,
  kAttnOutput,
  kFfnUp,
  kFfnGate,
  kFfnDown,
  kOther
};

Category category_of(std::string_view name);
inline bool is_ffn(Category c) {
  return c == Category::kFfnDown || c == Category::kFfnGate || c == Category::kFfnUp;
}
// Layer number of "blk.N.*" (-1 otherwise).
int64_t layer_of(std::string_view name);

// What the rules know about the model, with the counters already resolved for one tensor.
struct RuleInput {
  QuantMix mix = QuantMix::kQ8_0;
  bool falcon = false;
  bool llama_70b = false;  // 8 query heads share each attn_v: cheap to give it more bits
  int64_t n_gqa = 1;
  bool tied = false;     // no output.weight: the embedding is the output head
  int64_t n_expert = 0;  // 8 (Mixtral) has rules of its own; >= 4 raises attn_v in iq1/iq2
  bool imatrix = false;  // an importance matrix is given
  int64_t i_attn_v = 0, n_attn_v = 0;
  // llama.cpp's running count of the ffn_down tensors the rules saw before this one: the 1-2 bit
  // mixtures' ffn_down rule reads it as the layer, even in a mixture-of-experts model.
  int64_t i_ffn_down = 0;
  // The other FFN rules' layer (llama.cpp's layer_info): in a dense model the running count of
  // this tensor's kind (ffn_down, ffn_gate or ffn_up), in a mixture-of-experts model the N of its
  // blk.N. name.
  int64_t i_ffn = 0;
  int64_t n_ffn = 0;  // the block count
};

// The mixture's type for one quantizable tensor of `cols` columns (before the shape fallback).
GgmlType rule_type(const RuleInput& in, Category cat, uint64_t cols);

// Whether the FFN rules of `mix` read a mixture-of-experts tensor's layer from its name (llama.cpp
// stops on a name without one there): every mixture with rules but the 1-2 bit i-quants, whose
// branch of llama_tensor_get_type counts ffn_down tensors instead.
bool ffn_rules_read_layer(QuantMix mix);

}  // namespace ridge::offline::mix_rules
