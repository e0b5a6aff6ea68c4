#include "model/config_gemma4.h"

#include <algorithm>

#include "gguf/reader.h"

namespace ridge::model {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 20;

// A scalar, or one value per layer: `values` gets one per layer either way.
Result<std::vector<int64_t>> per_layer_ints(const gguf::File& f, const std::string& key,
                                            int64_t n_layer, int64_t fallback) {
  const gguf::Value* v = f.find(key);
  if (v == nullptr) return std::vector<int64_t>(static_cast<size_t>(n_layer), fallback);
  if (v->as_array() == nullptr) {
    RIDGE_ASSIGN_OR_RETURN(int64_t x, f.get_int(key));
    return std::vector<int64_t>(static_cast<size_t>(n_layer), x);
  }
  RIDGE_ASSIGN_OR_RETURN(std::vector<int64_t> xs, f.get_int_array(key));
  if (static_cast<int64_t>(xs.size()) != n_layer) {
    return error("metadata '{}' has {} values for {} layers", key, xs.size(), n_layer);
  }
  return xs;
}

// The one value of `xs` over the layers whose pattern bit is `swa` (fallback: none of them).
Result<int64_t> value_of_kind(const std::string& key, const std::vector<int64_t>& xs,
                              const std::vector<uint8_t>& pattern, bool swa, int64_t fallback) {
  int64_t v = -1;
  for (size_t il = 0; il < xs.size(); ++il) {
    if ((pattern[il] != 0) != swa) continue;
    if (v >= 0 && xs[il] != v) {
      return error("not supported yet: '{}' differs between {} layers ({} and {})", key,
                   swa ? "sliding-window" : "global", v, xs[il]);
    }
    v = xs[il];
  }
  return v >= 0 ? v : fallback;
}

}  // namespace

Status read_gemma4_layer_arrays(const gguf::File& f, ModelConfig& c) {
  const std::string a = c.arch;
  const std::string pattern_key = a + ".attention.sliding_window_pattern";
  if (!f.has(pattern_key)) return error("missing metadata '{}'", pattern_key);
  RIDGE_ASSIGN_OR_RETURN(std::vector<bool> pattern, f.get_bool_array(pattern_key));
  if (static_cast<int64_t>(pattern.size()) != c.n_layer) {
    return error("metadata '{}' has {} values for {} layers", pattern_key, pattern.size(), c.n_layer);
  }
  c.swa_layers.assign(pattern.begin(), pattern.end());

  const std::string ff_key = a + ".feed_forward_length";
  if (!f.has(ff_key)) return error("missing metadata '{}'", ff_key);
  RIDGE_ASSIGN_OR_RETURN(std::vector<int64_t> ff, per_layer_ints(f, ff_key, c.n_layer, 0));
  for (int64_t x : ff) {
    if (x < 1 || x > kMaxDim) return error("metadata '{}' = {} is outside [1, {}]", ff_key, x, kMaxDim);
  }
  c.n_ff = ff[0];
  if (std::any_of(ff.begin(), ff.end(), [&](int64_t x) { return x != ff[0]; })) c.n_ff_layers = ff;

  const std::string kv_key = a + ".attention.head_count_kv";
  RIDGE_ASSIGN_OR_RETURN(std::vector<int64_t> kv, per_layer_ints(f, kv_key, c.n_layer, c.n_head));
  RIDGE_ASSIGN_OR_RETURN(c.n_head_kv, value_of_kind(kv_key, kv, c.swa_layers, false, kv[0]));
  RIDGE_ASSIGN_OR_RETURN(int64_t kv_swa, value_of_kind(kv_key, kv, c.swa_layers, true, c.n_head_kv));
  for (int64_t h : {c.n_head_kv, kv_swa}) {
    if (h < 1 || h > c.n_head || c.n_head % h != 0) {
      return error("'{}' = {} does not divide the {} attention heads", kv_key, h, c.n_head);
    }
  }
  if (kv_swa != c.n_head_kv) c.n_head_kv_swa = kv_swa;
  return ok_status();
}

Status read_gemma4(const gguf::File& f, ModelConfig& c) {
  const std::string a = c.arch;
  c.moe_gemma4 = c.is_moe();
  c.moe_norm_topk = c.is_moe();  // the picked probabilities renormalized to sum 1
  RIDGE_ASSIGN_OR_RETURN(c.n_swa, f.get_int_or(a + ".attention.sliding_window", 0));
  if (c.n_swa < 0 || c.n_swa > (int64_t{1} << 26)) {
    return error("metadata '{}.attention.sliding_window' = {} is not a window", a, c.n_swa);
  }
  if (c.n_swa == 0) c.swa_layers.assign(c.swa_layers.size(), 0);
  RIDGE_ASSIGN_OR_RETURN(int64_t hd_swa, f.get_int_or(a + ".attention.key_length_swa", c.head_dim));
  RIDGE_ASSIGN_OR_RETURN(int64_t vd_swa, f.get_int_or(a + ".attention.value_length_swa", hd_swa));
  if (hd_swa < 2 || hd_swa > 4096 || vd_swa != hd_swa) {
    return error("not supported yet: sliding-window key/value lengths {} / {}", hd_swa, vd_swa);
  }
  if (hd_swa != c.head_dim) c.head_dim_swa = hd_swa;
  RIDGE_ASSIGN_OR_RETURN(int64_t rd_swa, f.get_int_or(a + ".rope.dimension_count_swa", c.rope_dims));
  if (rd_swa < 0 || rd_swa > hd_swa || rd_swa % 2 != 0) {
    return error("'{}.rope.dimension_count_swa' = {} must be even and at most the head size {}", a,
                 rd_swa, hd_swa);
  }
  if (rd_swa != c.rope_dims) c.rope_dims_swa = rd_swa;
  RIDGE_ASSIGN_OR_RETURN(double base_swa, f.get_float_or(a + ".rope.freq_base_swa", 10000.0));
  if (!(base_swa > 1.0 && base_swa < 1e12)) {
    return error("metadata '{}.rope.freq_base_swa' = {} is not a rope base", a, base_swa);
  }
  if (c.yarn.factor > 0.0f) return error("not supported yet: YaRN rope scaling in a '{}' model", a);
  c.rope_theta_swa = static_cast<float>(base_swa);
  c.rope_freq_scale_swa = 1.0f;

  RIDGE_ASSIGN_OR_RETURN(c.n_kv_shared_layers, f.get_int_or(a + ".attention.shared_kv_layers", 0));
  if (c.n_kv_shared_layers < 0 || c.n_kv_shared_layers > c.n_layer - 2) {
    return error("'{}.attention.shared_kv_layers' = {} leaves fewer than 2 of {} layers with KV", a,
                 c.n_kv_shared_layers, c.n_layer);
  }
  if (c.n_kv_shared_layers > 0) {
    // Shared layers read the last sliding-window layer (first_shared - 2) or the last global one
    // (first_shared - 1) before them, as llama.cpp wires it: both must be of that kind.
    const int64_t first = c.n_layer - c.n_kv_shared_layers;
    if (!c.is_swa_layer(first - 2) || c.is_swa_layer(first - 1)) {
      return error("not supported yet: KV sharing where layers {} and {} are not a sliding-window "
                   "then a global layer", first - 2, first - 1);
    }
  }
  RIDGE_ASSIGN_OR_RETURN(c.n_embd_per_layer, f.get_int_or(a + ".embedding_length_per_layer_input", 0));
  if (c.n_embd_per_layer < 0 || c.n_embd_per_layer > kMaxDim ||
      c.n_embd_per_layer * c.n_layer > kMaxDim) {
    return error("metadata '{}.embedding_length_per_layer_input' = {} is out of range", a,
                 c.n_embd_per_layer);
  }
  return ok_status();
}

}  // namespace ridge::model
