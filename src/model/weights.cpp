#include "model/weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "gguf/reader.h"
#include "kernels/weight_layout.h"
#include "tensor/fp16.h"

namespace ridge::model {
namespace {

std::string shape_str(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + "]";
}

Status check_shape(const gguf::TensorInfo& t, std::vector<uint64_t> expect) {
  // ggml drops trailing dimensions of 1 inconsistently across writers: compare without them.
  auto trim = [](std::vector<uint64_t> v) {
    while (v.size() > 1 && v.back() == 1) v.pop_back();
    return v;
  };
  if (trim(t.shape) != trim(expect)) {
    return error("tensor '{}' has shape {}, expected {}", t.name, shape_str(t.shape),
                 shape_str(expect));
  }
  return ok_status();
}

}  // namespace

std::string_view ffn_norm_tensor(const ModelConfig& cfg) {
  const bool post = cfg.arch == "gpt-oss" || cfg.arch == "qwen35" || cfg.arch == "qwen35moe";
  return post ? "post_attention_norm.weight" : "ffn_norm.weight";
}

std::string layer_tensor(int64_t il, std::string_view suffix) {
  return fmt::format("blk.{}.{}", il, suffix);
}

void WeightBinder::add_region(const std::string& name, const void* data, uint64_t bytes) {
  for (const WeightRegion& r : out_.regions) {
    if (r.data == data) return;
  }
  out_.regions.push_back({name, data, bytes});
}

bool WeightBinder::has(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

kernels::WeightView WeightBinder::view_of(const gguf::TensorInfo& t, const uint8_t* data,
                                          int64_t rows, int64_t cols, uint64_t row_bytes) {
  kernels::WeightView v;
  v.type = t.type;
  v.data = data;
  v.rows = rows;
  v.cols = cols;
  v.row_bytes = row_bytes;
  const kernels::WeightLayout layout = kernels_.layout_for(t.type);
  if (!writable_.empty() && layout != kernels::WeightLayout::kRows) {
    const uint64_t n_bytes = static_cast<uint64_t>(rows) * row_bytes;
    RIDGE_CHECK(data >= file_.bytes().data() && data + n_bytes <= file_.bytes().data() + file_.bytes().size());
    if (std::find(converted_.begin(), converted_.end(), data) == converted_.end()) {
      uint8_t* bytes = writable_.data() + (data - file_.bytes().data());
      kernels::convert_layout(t.type, layout, bytes, rows, cols);
      converted_.push_back(data);
    }
    v.layout = layout;
  }
  return v;
}

Result<kernels::WeightView> WeightBinder::optional_matrix(const std::string& name, int64_t rows,
                                                          int64_t cols) {
  const gguf::TensorInfo* t = file_.find_tensor(name);
  if (t == nullptr) return kernels::WeightView{};
  RIDGE_RETURN_IF_ERROR(check_shape(*t, {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)}));
  if (!kernels_.supports_matmul(t->type)) {
    return error("not supported yet: {} in tensor '{}'", ggml_type_name(t->type), name);
  }
  auto row_bytes = ggml_row_bytes(t->type, static_cast<uint64_t>(cols));
  if (!row_bytes) {
    return error("tensor '{}': {} columns do not fit {} blocks", name, cols, ggml_type_name(t->type));
  }
  out_.matrix_bytes += t->n_bytes;
  add_region(name, t->data, t->n_bytes);
  return view_of(*t, t->data, rows, cols, *row_bytes);
}

Result<std::vector<kernels::WeightView>> WeightBinder::stacked_matrices(const std::string& name,
                                                                        int64_t n, int64_t rows,
                                                                        int64_t cols) {
  const gguf::TensorInfo* t = file_.find_tensor(name);
  if (t == nullptr) return error("missing tensor '{}'", name);
  RIDGE_RETURN_IF_ERROR(check_shape(*t, {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows),
                                         static_cast<uint64_t>(n)}));
  if (!kernels_.supports_matmul(t->type)) {
    return error("not supported yet: {} in tensor '{}'", ggml_type_name(t->type), name);
  }
  auto row_bytes = ggml_row_bytes(t->type, static_cast<uint64_t>(cols));
  if (!row_bytes) {
    return error("tensor '{}': {} columns do not fit {} blocks", name, cols, ggml_type_name(t->type));
  }
  out_.matrix_bytes += t->n_bytes;
  add_region(name, t->data, t->n_bytes);
  const uint64_t matrix_bytes = static_cast<uint64_t>(rows) * *row_bytes;
  std::vector<kernels::WeightView> views;
  views.reserve(static_cast<size_t>(n));
  for (int64_t e = 0; e < n; ++e) {
    views.push_back(view_of(*t, t->data + static_cast<uint64_t>(e) * matrix_bytes, rows, cols, *row_bytes));
  }
  return views;
}

Result<kernels::WeightView> WeightBinder::matrix(const std::string& name, int64_t rows,
                                                 int64_t cols) {
  RIDGE_ASSIGN_OR_RETURN(auto v, optional_matrix(name, rows, cols));
  if (v.data == nullptr) return error("missing tensor '{}'", name);
  return v;
}

Result<VectorView> WeightBinder::optional_vector(const std::string& name, int64_t n) {
  return optional_f32(name, {static_cast<uint64_t>(n)});
}

Result<VectorView> WeightBinder::table(const std::string& name, int64_t rows, int64_t cols) {
  RIDGE_ASSIGN_OR_RETURN(auto v, optional_f32(name, {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)}));
  if (!v) return error("missing tensor '{}'", name);
  return v;
}

Result<VectorView> WeightBinder::optional_f32(const std::string& name, std::vector<uint64_t> shape) {
  const gguf::TensorInfo* t = file_.find_tensor(name);
  if (t == nullptr) return VectorView{};
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  RIDGE_RETURN_IF_ERROR(check_shape(*t, std::move(shape)));
  const auto count = static_cast<size_t>(n);
  if (t->type == GgmlType::kF32) {
    if (reinterpret_cast<uintptr_t>(t->data) % alignof(float) == 0) {
      add_region(name, t->data, n * sizeof(float));
      return VectorView{reinterpret_cast<const float*>(t->data), static_cast<int64_t>(n)};
    }
  } else if (t->type != GgmlType::kF16 && t->type != GgmlType::kBF16) {
    return error("not supported yet: {} in tensor '{}' (vectors must be f32, f16 or bf16)",
                 ggml_type_name(t->type), name);
  }
  std::vector<float> f(count);
  for (size_t i = 0; i < count; ++i) {
    if (t->type == GgmlType::kF32) {
      std::memcpy(&f[i], t->data + i * 4, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, t->data + i * 2, 2);
      f[i] = t->type == GgmlType::kF16 ? fp16_to_f32(h) : bf16_to_f32(h);
    }
  }
  out_.owned.push_back(std::move(f));
  add_region(name, out_.owned.back().data(), n * sizeof(float));
  return VectorView{out_.owned.back().data(), static_cast<int64_t>(n)};
}

Result<VectorView> WeightBinder::vector(const std::string& name, int64_t n) {
  RIDGE_ASSIGN_OR_RETURN(auto v, optional_vector(name, n));
  if (!v) return error("missing tensor '{}'", name);
  return v;
}

Status bind_common(WeightBinder& b, const ModelConfig& cfg, Weights& w) {
  const int64_t d = cfg.n_embd;
  RIDGE_ASSIGN_OR_RETURN(w.token_embd, b.matrix("token_embd.weight", cfg.n_vocab, d));
  // The embedding table is read one row per token, not streamed per step.
  w.matrix_bytes -= static_cast<uint64_t>(w.token_embd.rows) * w.token_embd.row_bytes;
  RIDGE_ASSIGN_OR_RETURN(w.output_norm, b.vector("output_norm.weight", d));
  RIDGE_ASSIGN_OR_RETURN(w.output, b.optional_matrix("output.weight", cfg.n_vocab, d));
  if (w.output.data == nullptr) {
    w.output = w.token_embd;
    w.matrix_bytes += static_cast<uint64_t>(w.output.rows) * w.output.row_bytes;
  }
  w.layers.resize(static_cast<size_t>(cfg.n_layer));
  for (int64_t il = 0; il < cfg.n_layer; ++il) {
    RIDGE_RETURN_IF_ERROR(bind_layer(b, cfg, il, w.layers[static_cast<size_t>(il)]));
  }
  return ok_status();
}

Status bind_layer(WeightBinder& b, const ModelConfig& cfg, int64_t il, LayerWeights& l) {
  const int64_t d = cfg.n_embd;
  auto name = [il](std::string_view s) { return layer_tensor(il, s); };
  RIDGE_ASSIGN_OR_RETURN(l.attn_norm, b.vector(name("attn_norm.weight"), d));
  if (!cfg.is_recurrent_layer(il)) {  // a linear layer's projections are its architecture's
    const int64_t qd = cfg.layer_q_dim(il), kvd = cfg.layer_kv_dim(il);
    RIDGE_ASSIGN_OR_RETURN(l.wq, b.matrix(name("attn_q.weight"), cfg.attn_output_gate ? 2 * qd : qd, d));
    if (cfg.has_own_kv(il)) {  // gemma4: V may be K (no attn_v); shared layers have neither
      RIDGE_ASSIGN_OR_RETURN(l.wk, b.matrix(name("attn_k.weight"), kvd, d));
      if (cfg.arch == "gemma4") {
        RIDGE_ASSIGN_OR_RETURN(l.wv, b.optional_matrix(name("attn_v.weight"), kvd, d));
      } else {
        RIDGE_ASSIGN_OR_RETURN(l.wv, b.matrix(name("attn_v.weight"), kvd, d));
      }
    }
    RIDGE_ASSIGN_OR_RETURN(l.wo, b.matrix(name("attn_output.weight"), d, qd));
  }
  RIDGE_ASSIGN_OR_RETURN(l.ffn_norm, b.vector(name(ffn_norm_tensor(cfg)), d));
  if (cfg.is_moe()) {
    RIDGE_RETURN_IF_ERROR(bind_experts(b, cfg, il, l));
    if (!cfg.moe_gemma4) return ok_status();  // gemma4 keeps a dense FFN beside its experts
  }
  const int64_t ff = cfg.layer_n_ff(il);
  RIDGE_ASSIGN_OR_RETURN(l.w_gate, b.matrix(name("ffn_gate.weight"), ff, d));
  RIDGE_ASSIGN_OR_RETURN(l.w_up, b.matrix(name("ffn_up.weight"), ff, d));
  RIDGE_ASSIGN_OR_RETURN(l.w_down, b.matrix(name("ffn_down.weight"), d, ff));
  return ok_status();
}

Status bind_experts(WeightBinder& b, const ModelConfig& cfg, int64_t il, LayerWeights& l) {
  const int64_t d = cfg.n_embd, e = cfg.n_expert, ff = cfg.n_ff_exp;
  auto name = [il](std::string_view s) { return layer_tensor(il, s); };
  RIDGE_ASSIGN_OR_RETURN(l.router, b.matrix(name("ffn_gate_inp.weight"), e, d));
  if (cfg.moe_gemma4 && b.has(name("ffn_gate_up_exps.weight"))) {
    RIDGE_ASSIGN_OR_RETURN(l.exp_gate_up, b.stacked_matrices(name("ffn_gate_up_exps.weight"), e, 2 * ff, d));
  } else {
    RIDGE_ASSIGN_OR_RETURN(l.exp_gate, b.stacked_matrices(name("ffn_gate_exps.weight"), e, ff, d));
    RIDGE_ASSIGN_OR_RETURN(l.exp_up, b.stacked_matrices(name("ffn_up_exps.weight"), e, ff, d));
  }
  RIDGE_ASSIGN_OR_RETURN(l.exp_down, b.stacked_matrices(name("ffn_down_exps.weight"), e, d, ff));
  if (cfg.moe_swiglu_oai) {  // gpt-oss: biased router and experts
    RIDGE_ASSIGN_OR_RETURN(l.router_bias, b.vector(name("ffn_gate_inp.bias"), e));
    RIDGE_ASSIGN_OR_RETURN(l.exp_gate_bias, b.table(name("ffn_gate_exps.bias"), e, ff));
    RIDGE_ASSIGN_OR_RETURN(l.exp_up_bias, b.table(name("ffn_up_exps.bias"), e, ff));
    RIDGE_ASSIGN_OR_RETURN(l.exp_down_bias, b.table(name("ffn_down_exps.bias"), e, d));
  }
  if (cfg.n_ff_shexp > 0) {
    const int64_t sff = cfg.n_ff_shexp;
    RIDGE_ASSIGN_OR_RETURN(l.shexp_gate, b.vector(name("ffn_gate_inp_shexp.weight"), d));
    RIDGE_ASSIGN_OR_RETURN(l.w_gate, b.matrix(name("ffn_gate_shexp.weight"), sff, d));
    RIDGE_ASSIGN_OR_RETURN(l.w_up, b.matrix(name("ffn_up_shexp.weight"), sff, d));
    RIDGE_ASSIGN_OR_RETURN(l.w_down, b.matrix(name("ffn_down_shexp.weight"), d, sff));
  }
  return ok_status();
}

}  // namespace ridge::model
