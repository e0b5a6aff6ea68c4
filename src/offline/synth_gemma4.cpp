// Gemma 4's synthetic tensors and metadata (build_synthetic_model's part for `gemma4`).
#include <algorithm>
#include <cmath>
#include <vector>

#include "offline/synth_internal.h"

namespace ridge::offline {

// A Gemma 4 layer (config.h): its own head size and KV heads; no K/V projections or K norm where
// it reads another layer's KV; no attn_v on global layers (V is K there, as in gemma-4-31B);
// the per-layer embedding's gate, projection and norm; an output scale.
Status add_gemma4_layer(gguf::Writer& w, const ModelConfig& c, int64_t il, const std::string& p,
                        const SynthOptions& opt, const AddMatrix& add_matrix) {
  const int64_t d = c.n_embd, hd = c.layer_head_dim(il), qd = c.layer_q_dim(il);
  const int64_t kvd = c.layer_kv_dim(il), ff = c.layer_n_ff(il), pl = c.n_embd_per_layer;
  const Init norm{1.0f, 0.1f};
  const GgmlType f32 = GgmlType::kF32;
  RIDGE_RETURN_IF_ERROR(add_random(w, p + "attn_norm.weight", f32, d, 1, norm, opt));
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "attn_q.weight", d, qd, linear_init(d), 1));
  RIDGE_RETURN_IF_ERROR(add_random(w, p + "attn_q_norm.weight", f32, hd, 1, norm, opt));
  if (c.has_own_kv(il)) {
    RIDGE_RETURN_IF_ERROR(add_matrix(p + "attn_k.weight", d, kvd, linear_init(d), 1));
    if (c.is_swa_layer(il)) RIDGE_RETURN_IF_ERROR(add_matrix(p + "attn_v.weight", d, kvd, linear_init(d), 1));
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "attn_k_norm.weight", f32, hd, 1, norm, opt));
  }
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "attn_output.weight", qd, d, linear_init(qd), 1));
  RIDGE_RETURN_IF_ERROR(add_random(w, p + "post_attention_norm.weight", f32, d, 1, norm, opt));
  RIDGE_RETURN_IF_ERROR(add_random(w, p + "ffn_norm.weight", f32, d, 1, norm, opt));
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "ffn_gate.weight", d, ff, linear_init(d), 1));
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "ffn_up.weight", d, ff, linear_init(d), 1));
  RIDGE_RETURN_IF_ERROR(add_matrix(p + "ffn_down.weight", ff, d, linear_init(ff), 1));
  RIDGE_RETURN_IF_ERROR(add_random(w, p + "post_ffw_norm.weight", f32, d, 1, norm, opt));
  if (c.is_moe()) {  // experts beside the dense FFN, gate and up fused as the converter writes them
    const int64_t e = c.n_expert, fe = c.n_ff_exp;
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "ffn_gate_inp.weight", f32, d, e,
                                     Init{0.0f, 2.0f / std::sqrt(static_cast<float>(d))}, opt));
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "ffn_gate_inp.scale", f32, d, 1, Init{1.0f, 0.3f}, opt));
    RIDGE_RETURN_IF_ERROR(add_matrix(p + "ffn_gate_up_exps.weight", d, 2 * fe, linear_init(d), e));
    RIDGE_RETURN_IF_ERROR(add_matrix(p + "ffn_down_exps.weight", fe, d, linear_init(fe), e));
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "ffn_down_exps.scale", f32, e, 1, Init{1.0f, 0.3f}, opt));
    for (const char* n : {"pre_ffw_norm_2.weight", "post_ffw_norm_1.weight", "post_ffw_norm_2.weight"}) {
      RIDGE_RETURN_IF_ERROR(add_random(w, p + n, f32, d, 1, norm, opt));
    }
  }
  if (pl > 0) {
    RIDGE_RETURN_IF_ERROR(add_matrix(p + "inp_gate.weight", d, pl, linear_init(d), 1));
    RIDGE_RETURN_IF_ERROR(add_matrix(p + "proj.weight", pl, d, linear_init(pl), 1));
    RIDGE_RETURN_IF_ERROR(add_random(w, p + "post_norm.weight", f32, d, 1, norm, opt));
  }
  return add_random(w, p + "layer_output_scale.weight", f32, 1, 1, Init{1.0f, 0.3f}, opt);
}

// Gemma 4's model-wide tensors: the global layers' rope_freqs (a quarter of the pairs rotate,
// the others are held still by a divisor of 1e30, as the converter writes "proportional" rope),
// and the per-layer embeddings' table, projection and norm.
Status add_gemma4_globals(gguf::Writer& w, const ModelConfig& c, const SynthOptions& opt,
                          const AddMatrix& add_matrix) {
  const int64_t half = c.rope_dims / 2;
  std::vector<float> factors(static_cast<size_t>(half), 1e30f);
  std::fill(factors.begin(), factors.begin() + std::max<int64_t>(1, half / 4), 1.0f);
  RIDGE_RETURN_IF_ERROR(w.add_tensor_data(
      "rope_freqs.weight", GgmlType::kF32, {factors.size()},
      std::span(reinterpret_cast<const uint8_t*>(factors.data()), factors.size() * sizeof(float))));
  const int64_t pl = c.n_embd_per_layer, all = pl * c.n_layer;
  if (pl == 0) return ok_status();
  RIDGE_RETURN_IF_ERROR(add_matrix("per_layer_token_embd.weight", all, c.n_vocab, Init{0.0f, 1.0f / std::sqrt(static_cast<float>(pl))}, 1));
  RIDGE_RETURN_IF_ERROR(add_matrix("per_layer_model_proj.weight", c.n_embd, all, linear_init(c.n_embd), 1));
  return add_random(w, "per_layer_proj_norm.weight", GgmlType::kF32, pl, 1, Init{1.0f, 0.1f}, opt);
}

// Gemma 4's per-layer metadata: the window pattern, FFN widths and KV heads per layer where
// they differ, the sliding-window layers' head size and rope dimensions, KV sharing and the
// per-layer embeddings' width.
void write_gemma4_metadata(const ModelConfig& c, gguf::Writer& w) {
  const std::string a = c.arch;
  auto u32 = [](int64_t x) { return gguf::make_u32(static_cast<uint32_t>(x)); };
  std::vector<bool> pattern;
  std::vector<int32_t> ff, kv;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    pattern.push_back(c.is_swa_layer(il));
    ff.push_back(static_cast<int32_t>(c.layer_n_ff(il)));
    kv.push_back(static_cast<int32_t>(c.layer_n_head_kv(il)));
  }
  w.set(a + ".attention.sliding_window_pattern", gguf::make_bool_array(pattern));
  if (!c.n_ff_layers.empty()) w.set(a + ".feed_forward_length", gguf::make_i32_array(ff));
  if (c.n_head_kv_swa > 0) w.set(a + ".attention.head_count_kv", gguf::make_i32_array(kv));
  const int64_t hd_swa = c.head_dim_swa > 0 ? c.head_dim_swa : c.head_dim;
  w.set(a + ".attention.key_length_swa", u32(hd_swa));
  w.set(a + ".attention.value_length_swa", u32(hd_swa));
  w.set(a + ".rope.dimension_count_swa", u32(c.swa_rope_dims()));
  w.set(a + ".attention.shared_kv_layers", u32(c.n_kv_shared_layers));
  w.set(a + ".embedding_length_per_layer_input", u32(c.n_embd_per_layer));
}

}  // namespace ridge::offline
