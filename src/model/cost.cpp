#include "model/cost.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "gguf/reader.h"

namespace ridge::model {
namespace {

constexpr std::array<std::pair<TensorRole, std::string_view>, 39> kRoleNames = {{
    {TensorRole::kTokenEmbd, "token_embd"},   {TensorRole::kOutput, "output"},
    {TensorRole::kOutputNorm, "output_norm"}, {TensorRole::kAttnNorm, "attn_norm"},
    {TensorRole::kAttnQ, "attn_q"},           {TensorRole::kAttnK, "attn_k"},
    {TensorRole::kAttnV, "attn_v"},           {TensorRole::kAttnO, "attn_output"},
    {TensorRole::kAttnQNorm, "attn_q_norm"},  {TensorRole::kAttnKNorm, "attn_k_norm"},
    {TensorRole::kAttnQBias, "attn_q.bias"},  {TensorRole::kAttnKBias, "attn_k.bias"},
    {TensorRole::kAttnVBias, "attn_v.bias"},  {TensorRole::kFfnNorm, "ffn_norm"},
    {TensorRole::kFfnGate, "ffn_gate"},       {TensorRole::kFfnUp, "ffn_up"},
    {TensorRole::kFfnDown, "ffn_down"},
    {TensorRole::kFfnGateInp, "ffn_gate_inp"},       {TensorRole::kFfnGateExps, "ffn_gate_exps"},
    {TensorRole::kFfnUpExps, "ffn_up_exps"},         {TensorRole::kFfnDownExps, "ffn_down_exps"},
    {TensorRole::kFfnGateInpShexp, "ffn_gate_inp_shexp"}, {TensorRole::kFfnGateShexp, "ffn_gate_shexp"},
    {TensorRole::kFfnUpShexp, "ffn_up_shexp"},       {TensorRole::kFfnDownShexp, "ffn_down_shexp"},
    {TensorRole::kSsmQkv, "attn_qkv"},        {TensorRole::kSsmGate, "attn_gate"},
    {TensorRole::kSsmBeta, "ssm_beta"},       {TensorRole::kSsmAlpha, "ssm_alpha"},
    {TensorRole::kSsmConv, "ssm_conv1d"},     {TensorRole::kSsmDtBias, "ssm_dt.bias"},
    {TensorRole::kSsmA, "ssm_a"},             {TensorRole::kSsmNorm, "ssm_norm"},
    {TensorRole::kSsmOut, "ssm_out"},
    {TensorRole::kPleTokenEmbd, "per_layer_token_embd"}, {TensorRole::kPleModelProj, "per_layer_model_proj"},
    {TensorRole::kPleGate, "inp_gate"},       {TensorRole::kPleProj, "proj"},
    {TensorRole::kFfnGateUpExps, "ffn_gate_up_exps"},
}};

// The GGUF name of a role's tensor after "blk.N.": "<stem>.weight", a bias as it is, ssm_a bare.
std::string tensor_suffix(TensorRole role, std::string_view stem) {
  if (stem.ends_with(".bias") || role == TensorRole::kSsmA) return std::string(stem);
  return std::string(stem) + ".weight";
}

// Weights stored in the weight type (as opposed to norms, biases and routers, kept f32).
bool is_matrix(TensorRole r) {
  switch (r) {
    case TensorRole::kTokenEmbd: case TensorRole::kOutput: case TensorRole::kAttnQ:
    case TensorRole::kAttnK: case TensorRole::kAttnV: case TensorRole::kAttnO:
    case TensorRole::kFfnGate: case TensorRole::kFfnUp: case TensorRole::kFfnDown:
    case TensorRole::kFfnGateExps: case TensorRole::kFfnUpExps: case TensorRole::kFfnDownExps:
    case TensorRole::kFfnGateShexp: case TensorRole::kFfnUpShexp: case TensorRole::kFfnDownShexp:
    case TensorRole::kSsmQkv: case TensorRole::kSsmGate: case TensorRole::kSsmBeta:
    case TensorRole::kSsmAlpha: case TensorRole::kSsmOut: case TensorRole::kPleTokenEmbd:
    case TensorRole::kPleModelProj: case TensorRole::kPleGate: case TensorRole::kPleProj:
    case TensorRole::kFfnGateUpExps:
      return true;
    default:
      return false;
  }
}

// Weights multiplied with every token's activations (matrices and the f32 routers): 2 FLOPs per
// element, f32 input and output traffic.
bool is_applied(TensorRole r) {
  return (is_matrix(r) && r != TensorRole::kTokenEmbd && r != TensorRole::kPleTokenEmbd) ||
         r == TensorRole::kFfnGateInp ||
         r == TensorRole::kFfnGateInpShexp;
}

bool is_routed_expert(TensorRole r) {
  return r == TensorRole::kFfnGateExps || r == TensorRole::kFfnUpExps || r == TensorRole::kFfnDownExps;
}

// Row length of a matrix role of layer `layer` (-1: outside the layers) in the layout of cfg.
int64_t cols_of(TensorRole role, const ModelConfig& cfg, int64_t layer) {
  const int64_t il = std::max<int64_t>(layer, 0);
  switch (role) {
    case TensorRole::kAttnO: return cfg.layer_q_dim(il);
    case TensorRole::kFfnDown: return cfg.layer_n_ff(il);
    case TensorRole::kPleTokenEmbd: return cfg.n_layer * cfg.n_embd_per_layer;
    case TensorRole::kPleProj: return cfg.n_embd_per_layer;
    case TensorRole::kFfnDownExps: return cfg.n_ff_exp;
    case TensorRole::kFfnDownShexp: return cfg.n_ff_shexp;
    case TensorRole::kSsmOut: return cfg.ssm_value_dim();
    default: return cfg.n_embd;
  }
}

// A type that can hold rows of `cols` elements: llama.cpp's fallback (tensor/ggml_type.h).
GgmlType storable_type(GgmlType t, int64_t cols) { return fallback_type(t, static_cast<uint64_t>(cols)); }

// Bytes of a [rows, cols] tensor of type t (cols contiguous).
double tensor_bytes(GgmlType t, int64_t rows, int64_t cols) {
  GgmlType s = storable_type(t, cols);
  return static_cast<double>(*ggml_row_bytes(s, static_cast<uint64_t>(cols))) * static_cast<double>(rows);
}

struct Shape {
  TensorRole role;
  int64_t rows;  // of one expert for the routed experts' 3-D tensors
  int64_t cols;
  int64_t n = 1;  // stacked matrices: n_expert for the routed experts
};

// Every tensor of layer il with its [rows, cols] shape.
std::vector<Shape> layer_shapes(const ModelConfig& c, int64_t il) {
  std::vector<Shape> s = {{TensorRole::kAttnNorm, 1, c.n_embd}, {TensorRole::kFfnNorm, 1, c.n_embd}};
  if (c.is_recurrent_layer(il)) {
    const int64_t hv = c.ssm_n_v_heads;
    s.insert(s.end(), {{TensorRole::kSsmQkv, c.ssm_conv_dim(), c.n_embd},
                       {TensorRole::kSsmGate, c.ssm_value_dim(), c.n_embd},
                       {TensorRole::kSsmBeta, hv, c.n_embd},
                       {TensorRole::kSsmAlpha, hv, c.n_embd},
                       {TensorRole::kSsmConv, c.ssm_conv_dim(), c.ssm_conv_kernel},
                       {TensorRole::kSsmDtBias, 1, hv},
                       {TensorRole::kSsmA, 1, hv},
                       {TensorRole::kSsmNorm, 1, c.ssm_head_dim},
                       {TensorRole::kSsmOut, c.n_embd, c.ssm_value_dim()}});
  } else {
    const int64_t qd = c.layer_q_dim(il), kvd = c.layer_kv_dim(il);
    s.insert(s.end(), {{TensorRole::kAttnQ, c.attn_output_gate ? 2 * qd : qd, c.n_embd},
                       {TensorRole::kAttnO, c.n_embd, qd}});
    if (c.has_own_kv(il)) {  // (gemma4 files may lack attn_v on global layers: counted anyway)
      s.insert(s.end(), {{TensorRole::kAttnK, kvd, c.n_embd}, {TensorRole::kAttnV, kvd, c.n_embd}});
    }
    if (c.qk_norm) {
      s.push_back({TensorRole::kAttnQNorm, 1, c.layer_head_dim(il)});
      if (c.has_own_kv(il)) s.push_back({TensorRole::kAttnKNorm, 1, c.layer_head_dim(il)});
    }
    if (c.qkv_bias) {
      s.push_back({TensorRole::kAttnQBias, 1, c.q_dim()});
      s.push_back({TensorRole::kAttnKBias, 1, c.kv_dim()});
      s.push_back({TensorRole::kAttnVBias, 1, c.kv_dim()});
    }
  }
  if (c.is_moe()) {
    const int64_t e = c.n_expert, ff = c.n_ff_exp;
    s.push_back({TensorRole::kFfnGateInp, e, c.n_embd});
    s.push_back({TensorRole::kFfnGateExps, ff, c.n_embd, e});
    s.push_back({TensorRole::kFfnUpExps, ff, c.n_embd, e});
    s.push_back({TensorRole::kFfnDownExps, c.n_embd, ff, e});
    if (c.n_ff_shexp > 0) {
      s.push_back({TensorRole::kFfnGateInpShexp, 1, c.n_embd});
      s.push_back({TensorRole::kFfnGateShexp, c.n_ff_shexp, c.n_embd});
      s.push_back({TensorRole::kFfnUpShexp, c.n_ff_shexp, c.n_embd});
      s.push_back({TensorRole::kFfnDownShexp, c.n_embd, c.n_ff_shexp});
    }
  }
  if (!c.is_moe() || c.moe_gemma4) {  // gemma4's MoE layers keep a dense FFN beside the experts
    const int64_t ff = c.layer_n_ff(il);
    s.push_back({TensorRole::kFfnGate, ff, c.n_embd});
    s.push_back({TensorRole::kFfnUp, ff, c.n_embd});
    s.push_back({TensorRole::kFfnDown, c.n_embd, ff});
  }
  if (c.n_embd_per_layer > 0) {
    s.push_back({TensorRole::kPleGate, c.n_embd_per_layer, c.n_embd});
    s.push_back({TensorRole::kPleProj, c.n_embd, c.n_embd_per_layer});
  }
  return s;
}

}  // namespace

std::string_view tensor_role_name(TensorRole role) {
  for (const auto& [r, name] : kRoleNames) {
    if (r == role) return name;
  }
  return "?";
}

TensorRole bulk_role(const ModelConfig& cfg) {
  return cfg.is_moe() ? TensorRole::kFfnUpExps : TensorRole::kFfnUp;
}

TensorTypeFn uniform_types(GgmlType type) {
  return [type](TensorRole role, int64_t) { return is_matrix(role) ? type : GgmlType::kF32; };
}

TensorTypeFn types_by_tensor_name(TensorNameRule rule, const ModelConfig& cfg) {
  return [rule = std::move(rule), cfg](TensorRole role, int64_t layer) {
    if (!is_matrix(role)) return GgmlType::kF32;
    const int64_t cols = cols_of(role, cfg, layer);
    const std::string stem(tensor_role_name(role));
    const std::string name = layer >= 0 ? fmt::format("blk.{}.{}", layer, tensor_suffix(role, stem))
                                        : tensor_suffix(role, stem);
    return rule(name, static_cast<uint64_t>(cols));
  };
}

Result<TensorTypeFn> weight_types_from_gguf(const gguf::File& file) {
  std::map<std::pair<TensorRole, int64_t>, GgmlType> types;
  for (const auto& t : file.tensors()) {
    std::string_view rest = t.name;
    int64_t layer = -1;
    if (rest.starts_with("blk.")) {
      rest.remove_prefix(4);
      auto dot = rest.find('.');
      if (dot == std::string_view::npos) continue;
      auto [p, ec] = std::from_chars(rest.data(), rest.data() + dot, layer);
      if (ec != std::errc() || p != rest.data() + dot) continue;
      rest.remove_prefix(dot + 1);
    }
    for (const auto& [role, stem] : kRoleNames) {
      if (rest == tensor_suffix(role, stem)) types[{role, layer}] = t.type;
    }
  }
  if (!types.count({TensorRole::kTokenEmbd, -1})) {
    return error("{}: no tensor 'token_embd.weight'", file.path());
  }
  return TensorTypeFn([types = std::move(types)](TensorRole role, int64_t layer) {
    auto it = types.find({role, layer});
    if (it != types.end()) return it->second;
    if (role == TensorRole::kOutput) return types.at({TensorRole::kTokenEmbd, -1});  // tied
    // A mixture-of-experts file has experts instead of a dense FFN: answer with their type.
    TensorRole alt = role;
    if (role == TensorRole::kFfnGate) alt = TensorRole::kFfnGateExps;
    if (role == TensorRole::kFfnUp) alt = TensorRole::kFfnUpExps;
    if (role == TensorRole::kFfnDown) alt = TensorRole::kFfnDownExps;
    // gemma4's experts may keep gate and up in one tensor.
    if (role == TensorRole::kFfnGateExps || role == TensorRole::kFfnUpExps) alt = TensorRole::kFfnGateUpExps;
    for (TensorRole r : {role, alt}) {
      if (auto in_layer = types.find({r, layer}); in_layer != types.end()) return in_layer->second;
      // A matrix missing from a layer is reported by the model loader; count it like layer 0.
      if (auto first = types.find({r, 0}); first != types.end()) return first->second;
    }
    return GgmlType::kF32;
  });
}

double ModelCost::attention_flops_per_position() const { return attn_flops_full + attn_flops_window; }

double ModelCost::flops_per_token(int64_t context) const {
  const double c = static_cast<double>(context);
  return layer_flops_per_token + head_flops_per_row + attention_flops(std::max(c - 1.0, 0.0), 1.0);
}

double ModelCost::kv_read_bytes(double past, double n_new) const {
  const double all = past + n_new;
  const double in_window = window > 0 ? std::min(all, static_cast<double>(window) + n_new - 1.0) : all;
  return kv_read_full * all + kv_read_window * in_window;
}

double ModelCost::attention_flops(double past, double n_new) const {
  // Token i (1-based) of the chunk attends past + i positions: sum = n*past + n(n+1)/2.
  const double full = n_new * past + n_new * (n_new + 1.0) / 2.0;
  double capped = full;
  if (window > 0 && attn_flops_window > 0) {
    // sum_i min(past + i, w): the tokens before the cap, then w each.
    const double w = static_cast<double>(window);
    const double below = std::clamp(w - past, 0.0, n_new);  // tokens with past + i <= w
    capped = below * past + below * (below + 1.0) / 2.0 + (n_new - below) * w;
  }
  return attn_flops_full * full + attn_flops_window * capped;
}

double ModelCost::weight_bytes_for_experts(double experts_per_layer) const {
  return dense_read_bytes + experts_per_layer * expert_bytes_all_layers;
}

double expected_distinct_experts(int64_t n_expert, int64_t n_used, double n_tokens) {
  if (n_expert <= 0 || n_used <= 0 || n_tokens <= 0) return 0.0;
  const double e = static_cast<double>(n_expert);
  const double k = static_cast<double>(std::min(n_used, n_expert));
  if (n_tokens <= 1) return k * n_tokens;  // one token reads exactly its k experts
  if (k >= e) return e;
  // 1 - (1 - k/E)^n without cancellation: -expm1(n * log1p(-k/E)).
  return -e * std::expm1(n_tokens * std::log1p(-k / e));
}

Result<ModelCost> model_cost(const ModelConfig& cfg, const TensorTypeFn& types, kv::KvType kv_type) {
  if (cfg.n_layer <= 0 || cfg.n_embd <= 0 || cfg.n_vocab <= 0 || cfg.n_head <= 0 ||
      cfg.n_head_kv <= 0 || cfg.head_dim <= 0 || (cfg.n_ff <= 0 && !cfg.is_moe())) {
    return error("model '{}': incomplete shape (layers {}, embd {}, vocab {}, heads {}/{}, head_dim "
                 "{}, ff {})", cfg.name, cfg.n_layer, cfg.n_embd, cfg.n_vocab, cfg.n_head,
                 cfg.n_head_kv, cfg.head_dim, cfg.n_ff);
  }
  if (cfg.is_moe() && (cfg.n_expert_used <= 0 || cfg.n_expert_used > cfg.n_expert || cfg.n_ff_exp <= 0 ||
                       cfg.n_ff_shexp < 0)) {
    return error("model '{}': incomplete mixture of experts ({} experts, {} used per token, expert ff {}, "
                 "shared ff {})", cfg.name, cfg.n_expert, cfg.n_expert_used, cfg.n_ff_exp, cfg.n_ff_shexp);
  }
  ModelCost m;
  m.config = cfg;
  m.kv_type = kv_type;
  const double embd = static_cast<double>(cfg.n_embd);
  const double vocab = static_cast<double>(cfg.n_vocab);

  // Token embedding: stored whole, one row read per token. Tied: it is also the output head.
  GgmlType embd_t = types(TensorRole::kTokenEmbd, -1);
  double embd_bytes = tensor_bytes(embd_t, cfg.n_vocab, cfg.n_embd);
  m.embd_row_bytes = tensor_bytes(embd_t, 1, cfg.n_embd);
  m.weight_file_bytes += embd_bytes;
  m.n_params += vocab * embd;
  double head_bytes = embd_bytes;
  if (!cfg.tied_embeddings) {
    head_bytes = tensor_bytes(types(TensorRole::kOutput, -1), cfg.n_vocab, cfg.n_embd);
    m.weight_file_bytes += head_bytes;
    m.n_params += vocab * embd;
  }
  double norm_bytes = tensor_bytes(types(TensorRole::kOutputNorm, -1), 1, cfg.n_embd);
  m.weight_file_bytes += norm_bytes;
  m.n_params += embd;
  m.dense_read_bytes = head_bytes + norm_bytes;
  m.head_flops_per_row = 2.0 * vocab * embd;
  if (cfg.n_embd_per_layer > 0) {  // gemma4: a table read one row per token, a projection
    const int64_t width = cfg.n_layer * cfg.n_embd_per_layer;
    const GgmlType table_t = types(TensorRole::kPleTokenEmbd, -1);
    m.weight_file_bytes += tensor_bytes(table_t, cfg.n_vocab, width);
    m.embd_row_bytes += tensor_bytes(table_t, 1, width);
    m.n_params += vocab * static_cast<double>(width);
    const double proj = tensor_bytes(types(TensorRole::kPleModelProj, -1), width, cfg.n_embd);
    m.weight_file_bytes += proj;
    m.dense_read_bytes += proj;
    m.n_params += embd * static_cast<double>(width);
    m.layer_flops_per_token += 2.0 * embd * static_cast<double>(width);
  }

  const double n_used = static_cast<double>(cfg.n_expert_used);
  m.expert_bytes.assign(cfg.is_moe() ? static_cast<size_t>(cfg.n_layer) : 0, 0.0);
  for (int64_t l = 0; l < cfg.n_layer; ++l) {
    if (cfg.is_recurrent_layer(l)) {  // the conv's taps and the delta rule per state element
      m.layer_flops_per_token += 2.0 * static_cast<double>(cfg.ssm_conv_kernel * cfg.ssm_conv_dim()) +
                                 7.0 * static_cast<double>(cfg.ssm_n_v_heads * cfg.ssm_head_dim * cfg.ssm_head_dim);
    }
    for (const auto& s : layer_shapes(cfg, l)) {
      const double n = static_cast<double>(s.n);
      const double one = tensor_bytes(types(s.role, l), s.rows, s.cols);  // one matrix (expert)
      const double elems = static_cast<double>(s.rows) * static_cast<double>(s.cols);
      m.weight_file_bytes += n * one;
      m.n_params += n * elems;
      // A routed expert's matrices count once per expert a token uses; every other tensor once.
      const double per_token = is_routed_expert(s.role) ? n_used : 1.0;
      if (is_routed_expert(s.role)) {
        m.expert_bytes[static_cast<size_t>(l)] += one;
        m.expert_params += elems;
      } else {
        m.dense_read_bytes += one;
      }
      if (is_applied(s.role)) {
        m.layer_flops_per_token += per_token * 2.0 * elems;
        m.activation_bytes_per_token += per_token * 4.0 * static_cast<double>(s.rows + s.cols);
      }
    }
  }
  for (double b : m.expert_bytes) m.expert_bytes_all_layers += b;
  const double idle = static_cast<double>(cfg.n_expert - cfg.n_expert_used);  // 0 when dense
  m.weight_read_bytes = m.weight_bytes_for_experts(n_used);
  m.n_active_params = m.n_params - (cfg.is_moe() ? idle * m.expert_params : 0.0);
  m.active_weight_bytes = m.weight_file_bytes - (cfg.is_moe() ? idle * m.expert_bytes_all_layers : 0.0);
  m.head_activation_bytes = 4.0 * (embd + vocab);
  const double kv_elem = kv::kv_bytes_per_element(kv_type);
  for (int64_t l = 0; l < cfg.n_layer; ++l) {
    if (cfg.is_recurrent_layer(l)) continue;
    const double kv_row = 2.0 * static_cast<double>(cfg.layer_kv_dim(l)) * kv_elem;
    const double flops = 4.0 * static_cast<double>(cfg.layer_q_dim(l));
    if (cfg.has_own_kv(l)) {
      m.kv_bytes_per_token += kv_row;
      (cfg.is_swa_layer(l) ? m.kv_store_window : m.kv_store_full) += kv_row;
    }
    (cfg.is_swa_layer(l) ? m.kv_read_window : m.kv_read_full) += kv_row;
    (cfg.is_swa_layer(l) ? m.attn_flops_window : m.attn_flops_full) += flops;
  }
  m.state_bytes_per_seq = 4.0 * static_cast<double>(cfg.n_recurrent_layers()) *
                          static_cast<double>(cfg.ssm_state_floats());
  m.window = cfg.n_swa;
  m.n_window_layers = cfg.n_swa_layers();
  return m;
}

}  // namespace ridge::model
